// Command kubectl is the upstream kubectl, built from the k8s.io/kubectl module that
// Helm pins, so that the documentation's kubectl commands run in tests with no
// download but Go modules.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
		util.CheckErr(err)
	}
}
