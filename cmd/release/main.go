// Command release builds kubecel's release artefacts into a directory and checks them
// (package internal/release). make release runs it:
//
//	go run ./cmd/release -version v0.3.0 -revision $(git rev-parse HEAD) \
//	    -source-date-epoch $(git log -1 --format=%ct) -helm bin/helm -dist dist
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/kubecel/kubecel/internal/release"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		c         release.Config
		epoch     int64
		platforms string
		verify    bool
	)
	flag.StringVar(&c.Version, "version", "", "the release's tag, such as v0.3.0")
	flag.StringVar(&c.Revision, "revision", "", "the commit built (git rev-parse HEAD)")
	flag.BoolVar(&c.Modified, "modified", false, "the tree has local changes (the binaries then report dirty)")
	flag.Int64Var(&epoch, "source-date-epoch", 0, "the commit's time in seconds (git log -1 --format=%ct): every archive is dated at it")
	flag.StringVar(&platforms, "platforms", "linux/amd64 linux/arm64 darwin/amd64 darwin/arm64", "the platforms to build binaries for (the linux ones also get an image)")
	flag.StringVar(&c.Dist, "dist", "dist", "the directory the artefacts go to")
	flag.StringVar(&c.Helm, "helm", "bin/helm", "the helm binary that renders install.yaml and lints the chart")
	flag.BoolVar(&verify, "verify-only", false, "check the artefacts already in -dist, without building")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	var err error
	if c.Platforms, err = release.ParsePlatforms(platforms); err != nil {
		return err
	}
	c.Time = time.Unix(epoch, 0).UTC()
	if c.Root, err = os.Getwd(); err != nil {
		return err
	}
	c.Log = func(format string, args ...any) { fmt.Printf(">> "+format+"\n", args...) }
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	if !verify {
		if err := release.Build(ctx, c); err != nil {
			return err
		}
	}
	if err := release.Verify(ctx, c); err != nil {
		return fmt.Errorf("the artefacts in %s fail their checks:\n%w", c.Dist, err)
	}
	names := make([]string, 0, len(c.Platforms))
	for _, p := range c.Platforms {
		names = append(names, p.String())
	}
	fmt.Printf(">> %s: kubecel %s for %s built and checked in %s; SHA256SUMS:\n", c.Dist, c.Version, strings.Join(names, ", "), time.Since(start).Round(time.Second))
	sums, err := os.ReadFile(c.Dist + "/SHA256SUMS")
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(sums)
	return err
}
