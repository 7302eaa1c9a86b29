package engine

import (
	"github.com/kubecel/kubecel/rules"
)

// testIdentity is the installation of the package's in-process controllers.
var testIdentity = func() *rules.Identity {
	id, err := rules.NewIdentity("engine-test", []byte("engine-test-key-0123456789abcdef"))
	if err != nil {
		panic(err)
	}
	return id
}()
