// Command genbuiltin writes the schemas of the built-in Kubernetes kinds that package
// rules embeds (rules/builtin.json.gz), so that rules using them are type-checked
// without a cluster.
//
// It starts the local control plane (internal/controlplane, binaries in bin/), reads
// discovery and the OpenAPI v3 document of each group-version in groupVersions, and keeps
// the component schemas reachable from their resources' kinds, stripped to what type
// checking reads: types, properties, items, additionalProperties, $ref and the
// x-kubernetes markers (int-or-string, preserve-unknown-fields, embedded-resource). The
// output is gzip-compressed JSON, byte-for-byte the same for the same control plane.
//
// Run it with `go generate ./rules` or `make schemas`. With -check it compares instead of
// writing and exits 1 when the file is not current.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/kubecel/kubecel/internal/controlplane"
)

func main() {
	out := flag.String("out", "builtin.json.gz", "file to write (or, with -check, to compare)")
	check := flag.Bool("check", false, "compare the generated schemas with -out instead of writing them")
	flag.Parse()
	if err := run(*out, *check); err != nil {
		fmt.Fprintln(os.Stderr, "genbuiltin:", err)
		os.Exit(1)
	}
}

func run(out string, check bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(ctx, controlplane.Options{})
	if err != nil {
		return fmt.Errorf("start the control plane: %w", err)
	}
	data, genErr := Generate(ctx, cp.Config)
	if err := cp.Stop(); err != nil && genErr == nil {
		genErr = fmt.Errorf("stop the control plane: %w", err)
	}
	if genErr != nil {
		return genErr
	}
	if check {
		current, err := os.ReadFile(out)
		if err != nil {
			return err
		}
		if !bytes.Equal(current, data) {
			return fmt.Errorf("%s is not current: run `make schemas` and commit the result", out)
		}
		return nil
	}
	return os.WriteFile(out, data, 0o644)
}
