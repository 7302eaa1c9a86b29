package engine

import "github.com/kubecel/kubecel/internal/testenv"

// testIdentity is the installation of the package's in-process controllers.
var testIdentity = testenv.FixedIdentity("engine-test")
