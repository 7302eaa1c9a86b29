// Command kube-apiserver is the upstream Kubernetes API server, built from the
// pinned k8s.io/kubernetes module so that tests and `kubecel dev` need no download.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
