package release

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The image's facts, which the chart's default values and the tests share.
const (
	// ImageRepository is the name the image archives carry: kind load and docker load
	// put the image on a node or a daemon under ImageRepository:<version>, the chart's
	// default image.
	ImageRepository = "ghcr.io/kubecel/kubecel"
	// ImageUser is the uid:gid the image runs as.
	ImageUser = "65532:65532"
	// ImageEntrypoint is the binary's path in the image.
	ImageEntrypoint = "/kubecel"
	// CACertificates is where the image keeps its CA bundle, where Go looks on Linux.
	CACertificates = "etc/ssl/certs/ca-certificates.crt"
	// Source is the repository the OCI labels name.
	Source = "https://github.com/kubecel/kubecel"
)

// Annotations of an image's descriptor in index.json: the full name, which containerd
// (ctr images import, kind load image-archive) gives the image, and the tag, as docker
// save writes them.
const (
	annotationImageName = "io.containerd.image.name"
	annotationRefName   = "org.opencontainers.image.ref.name"
)

// ImageRef is the reference the image of version v carries.
func ImageRef(version string) string { return ImageRepository + ":" + version }

// Labels are the OCI labels of the image of c.
func Labels(c Config) map[string]string {
	return map[string]string{
		"org.opencontainers.image.source":   Source,
		"org.opencontainers.image.version":  c.Version,
		"org.opencontainers.image.revision": c.Revision,
		"org.opencontainers.image.created":  c.Time.UTC().Format(time.RFC3339),
		"org.opencontainers.image.title":    "kubecel",
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
}

// caBundle is the PEM file of the root certificates that Go's x509roots/fallback module
// carries (Mozilla's NSS trust store, pinned by go.sum): the bundle depends on the module
// version alone, not on the build machine. Roots that NSS trusts only for certificates
// issued before a date are left out: a PEM file cannot say so.
func caBundle() []byte {
	var buf bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		_ = pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate})
	}
	return buf.Bytes()
}

// baseLayer holds what every version of the image shares: the CA bundle, and passwd and
// group entries for root and for nonroot (65532), the user it runs as.
func baseLayer(mtime time.Time) (v1.Layer, error) {
	passwd := "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group := "root:x:0:\nnonroot:x:65532:\n"
	return layer([]entry{
		dir("etc"), dir("etc/ssl"), dir("etc/ssl/certs"),
		file(CACertificates, 0o644, caBundle()),
		file("etc/passwd", 0o644, []byte(passwd)),
		file("etc/group", 0o644, []byte(group)),
	}, mtime)
}

// layer is a gzip-compressed layer of entries, its bytes made here (tarGz) so that they
// depend on the entries alone.
func layer(entries []entry, mtime time.Time) (v1.Layer, error) {
	gz, err := tarGz(entries, mtime)
	if err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(gz)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// Image is the linux/arch image of c with bin, the kubecel binary for that platform:
// from scratch, in OCI media types, the base layer and the binary's, running bin as
// ImageUser.
func Image(c Config, arch string, bin []byte) (v1.Image, error) {
	base, err := baseLayer(c.Time)
	if err != nil {
		return nil, err
	}
	app, err := layer([]entry{file(ImageEntrypoint[1:], 0o755, bin)}, c.Time)
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: c.Time.UTC()}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, MediaType: types.OCILayer, History: v1.History{Created: created, CreatedBy: "kubecel release: CA certificates (golang.org/x/crypto/x509roots), passwd"}},
		mutate.Addendum{Layer: app, MediaType: types.OCILayer, History: v1.History{Created: created, CreatedBy: "kubecel release: " + ImageEntrypoint + " " + c.Version}},
	)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created = created
	cf.OS, cf.Architecture = "linux", arch
	cf.Config = v1.Config{
		User:       ImageUser,
		Entrypoint: []string{ImageEntrypoint},
		WorkingDir: "/",
		Labels:     Labels(c),
	}
	return mutate.ConfigFile(img, cf)
}

// imageTar builds the image of arch and returns its archive: an OCI image layout (the
// oci-layout file, index.json naming the image and its platform, blobs/sha256/) with
// docker save's manifest.json beside it, naming the same blobs. containerd reads the
// layout; docker load reads manifest.json (Docker 25 and later also the layout); crane
// push and go-containerregistry's tarball package read manifest.json.
func imageTar(c Config, arch string, bin []byte) ([]byte, error) {
	img, err := Image(c, arch, bin)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "kubecel-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	p, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return nil, err
	}
	// The image's blobs, then its descriptor in index.json, written out rather than by
	// AppendImage, which adds an artifactType that image descriptors do not carry
	// (docker save and BuildKit write none).
	if err := p.WriteImage(img); err != nil {
		return nil, err
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, err
	}
	manifestSize, err := img.Size()
	if err != nil {
		return nil, err
	}
	ref := ImageRef(c.Version)
	err = p.AppendDescriptor(v1.Descriptor{
		MediaType:   types.OCIManifestSchema1,
		Size:        manifestSize,
		Digest:      digest,
		Platform:    &v1.Platform{OS: "linux", Architecture: arch},
		Annotations: map[string]string{annotationImageName: ref, annotationRefName: c.Version},
	})
	if err != nil {
		return nil, err
	}
	manifest, err := dockerManifest(img, ref)
	if err != nil {
		return nil, err
	}
	entries := []entry{file("manifest.json", 0o644, manifest)}
	err = filepath.WalkDir(tmp, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == tmp {
			return err
		}
		rel, err := filepath.Rel(tmp, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			entries = append(entries, dir(filepath.ToSlash(rel)))
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		entries = append(entries, file(filepath.ToSlash(rel), 0o644, data))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return tarBytes(entries, c.Time)
}

// blobPath is where a blob lives in an image layout.
func blobPath(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }

// dockerManifest is docker save's manifest.json for img, named ref, pointing at the
// layout's blobs.
func dockerManifest(img v1.Image, ref string) ([]byte, error) {
	m, err := img.Manifest()
	if err != nil {
		return nil, err
	}
	d := tarball.Descriptor{Config: blobPath(m.Config.Digest), RepoTags: []string{ref}}
	for _, l := range m.Layers {
		d.Layers = append(d.Layers, blobPath(l.Digest))
	}
	data, err := json.Marshal(tarball.Manifest{d})
	if err != nil {
		return nil, fmt.Errorf("manifest.json: %w", err)
	}
	return data, nil
}
