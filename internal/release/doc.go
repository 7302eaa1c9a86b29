// Package release builds kubecel's release artefacts into a directory (dist/), with no
// container daemon and no network beyond the Go module proxy, and checks them:
//
//   - kubecel_<os>_<arch>.tar.gz: the static binary (-trimpath, CGO off, stamped with
//     the version, the commit and whether the tree had local changes) and the LICENSE;
//   - kubecel_image_<arch>.tar: for each Linux platform, an OCI image built from scratch
//     with go-containerregistry (CA certificates from golang.org/x/crypto/x509roots, a
//     passwd entry for uid 65532, the binary as the entrypoint, OCI labels), written as
//     an OCI image layout that also carries docker save's manifest.json, so that
//     docker load, ctr images import, kind load image-archive and crane push take it;
//   - kubecel-<version>.tgz: the Helm chart of deploy/helm/kubecel, its version and
//     appVersion set to the release's;
//   - install.yaml: the chart rendered with its default values (helm template), the
//     namespace first and Helm's bookkeeping labels left out, for kubectl apply;
//   - SHA256SUMS of all of them.
//
// Everything is reproducible: the same commit built with the same Go toolchain gives the
// same bytes. Archive entries are sorted, owned by 0:0, dated at the commit's time
// (SOURCE_DATE_EPOCH), and gzip streams carry no timestamp or name.
//
// Verify checks a dist directory as a user would: the checksums, each binary's format
// and architecture (the host's one is run), each image archive's layout, config and
// binary, the chart's metadata and install.yaml's image.
package release
