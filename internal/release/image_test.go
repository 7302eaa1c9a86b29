package release

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func testConfig() Config {
	return Config{Version: "v0.0.0-ci", Revision: strings.Repeat("0123456789", 4), Time: epoch, Platforms: Platforms}
}

// fakeBinary stands for a kubecel binary in the image tests that do not run it.
func fakeBinary(arch string) []byte { return []byte("kubecel for linux/" + arch) }

func imageArchiveFor(t *testing.T, arch string) []byte {
	t.Helper()
	data, err := imageTar(testConfig(), arch, fakeBinary(arch))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func sha(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// TestImageArchiveFormat reads an image archive as each of its readers does, from the
// bytes: an OCI image layout (oci-layout, index.json, content-addressed blobs), which
// containerd imports (ctr images import, kind load image-archive) by the name in
// index.json's io.containerd.image.name; and docker save's manifest.json, which docker
// load reads: the config's and layers' paths, the tag, and diff_ids in the config that
// are the layers' uncompressed digests.
func TestImageArchiveFormat(t *testing.T) {
	c := testConfig()
	data := imageArchiveFor(t, "arm64")
	files, err := readTar(data, c.Time)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n, content := range files {
		names = append(names, n)
		if hex, ok := strings.CutPrefix(n, "blobs/sha256/"); ok && sha(content) != hex {
			t.Errorf("%s has sha256 %s", n, sha(content))
		}
	}
	slices.Sort(names)
	if len(names) != 3+4 || names[4] != "index.json" || names[5] != "manifest.json" || names[6] != "oci-layout" {
		t.Fatalf("files %v, want four blobs (manifest, config, two layers), index.json, manifest.json, oci-layout", names)
	}
	if string(files["oci-layout"]) == "" || !strings.Contains(string(files["oci-layout"]), `"imageLayoutVersion": "1.0.0"`) {
		t.Errorf("oci-layout: %s", files["oci-layout"])
	}

	// index.json: one image manifest for linux/arm64, named as docker save names it.
	var index struct {
		SchemaVersion int    `json:"schemaVersion"`
		MediaType     string `json:"mediaType"`
		Manifests     []map[string]any
	}
	decode(t, files["index.json"], &index)
	if index.SchemaVersion != 2 || index.MediaType != string(types.OCIImageIndex) || len(index.Manifests) != 1 {
		t.Fatalf("index.json: %s", files["index.json"])
	}
	desc := index.Manifests[0]
	wantDesc := map[string]any{
		"mediaType": string(types.OCIManifestSchema1),
		"platform":  map[string]any{"os": "linux", "architecture": "arm64"},
		"annotations": map[string]any{
			"io.containerd.image.name":          "ghcr.io/kubecel/kubecel:v0.0.0-ci",
			"org.opencontainers.image.ref.name": "v0.0.0-ci",
		},
	}
	manifestHex := strings.TrimPrefix(desc["digest"].(string), "sha256:")
	delete(desc, "digest")
	delete(desc, "size")
	if diff := cmp.Diff(wantDesc, desc); diff != "" {
		t.Errorf("index.json's descriptor (-want +got):\n%s", diff)
	}

	// The manifest, and docker's manifest.json naming the same config and layers.
	var manifest struct {
		MediaType string
		Config    struct{ Digest string }
		Layers    []struct{ MediaType, Digest string }
	}
	decode(t, files["blobs/sha256/"+manifestHex], &manifest)
	var dockerManifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	decode(t, files["manifest.json"], &dockerManifest)
	if len(dockerManifest) != 1 {
		t.Fatalf("manifest.json lists %d images, want 1", len(dockerManifest))
	}
	dm := dockerManifest[0]
	wantLayers := []string{}
	for _, l := range manifest.Layers {
		if l.MediaType != string(types.OCILayer) {
			t.Errorf("layer media type %s", l.MediaType)
		}
		wantLayers = append(wantLayers, "blobs/sha256/"+strings.TrimPrefix(l.Digest, "sha256:"))
	}
	if manifest.MediaType != string(types.OCIManifestSchema1) || dm.Config != "blobs/sha256/"+strings.TrimPrefix(manifest.Config.Digest, "sha256:") ||
		!slices.Equal(dm.Layers, wantLayers) || !slices.Equal(dm.RepoTags, []string{"ghcr.io/kubecel/kubecel:v0.0.0-ci"}) {
		t.Errorf("manifest.json %+v does not name the manifest's config %s and layers %v", dm, manifest.Config.Digest, wantLayers)
	}

	// docker load checks each layer's uncompressed digest against the config's diff_ids.
	var config struct {
		Architecture, OS string
		Config           struct {
			User       string
			Entrypoint []string
			Labels     map[string]string
		}
		RootFS struct {
			Type    string
			DiffIDs []string `json:"diff_ids"`
		}
	}
	decode(t, files[dm.Config], &config)
	var diffIDs []string
	for _, l := range dm.Layers {
		zr, err := gzip.NewReader(bytes.NewReader(files[l]))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		diffIDs = append(diffIDs, "sha256:"+sha(raw))
	}
	if config.RootFS.Type != "layers" || !slices.Equal(config.RootFS.DiffIDs, diffIDs) {
		t.Errorf("rootfs %+v, want the layers' uncompressed digests %v", config.RootFS, diffIDs)
	}
	if config.OS != "linux" || config.Architecture != "arm64" || config.Config.User != "65532:65532" ||
		!slices.Equal(config.Config.Entrypoint, []string{"/kubecel"}) || config.Config.Labels["org.opencontainers.image.version"] != "v0.0.0-ci" {
		t.Errorf("config %+v", config)
	}

	// Verify's checks, which read it with go-containerregistry, pass; another binary fails.
	if err := checkImage(t.Context(), c, "arm64", data, fakeBinary("arm64")); err != nil {
		t.Errorf("checkImage: %v", err)
	}
	if err := checkImage(t.Context(), c, "arm64", data, fakeBinary("amd64")); err == nil {
		t.Error("checkImage took an image of another binary")
	}
	if err := checkImage(t.Context(), c, "amd64", data, fakeBinary("arm64")); err == nil {
		t.Error("checkImage took an arm64 image for amd64")
	}
}

func decode(t *testing.T, data []byte, out any) {
	t.Helper()
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
}

// TestImagePush pushes the archives of both architectures as crane push does (through
// manifest.json), to a registry (go-containerregistry's, in memory), joins them in a
// multi-arch index as crane index append does, and pulls each platform back from it: the
// config and layers are the archive's, so the image ID is the same.
func TestImagePush(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	index := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	configs := map[string]v1.Hash{}
	for _, arch := range []string{"amd64", "arm64"} {
		path := filepath.Join(t.TempDir(), imageArchive(arch))
		if err := os.WriteFile(path, imageArchiveFor(t, arch), 0o644); err != nil {
			t.Fatal(err)
		}
		img, err := tarball.ImageFromPath(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.ParseReference(host + "/platform/kubecel:v0.0.0-ci-" + arch)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatalf("push %s: %v", arch, err)
		}
		pushed, err := remote.Image(ref)
		if err != nil {
			t.Fatal(err)
		}
		if configs[arch], err = pushed.ConfigName(); err != nil {
			t.Fatal(err)
		}
		cf, err := pushed.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		index = mutate.AppendManifests(index, mutate.IndexAddendum{Add: pushed, Descriptor: v1.Descriptor{Platform: cf.Platform()}})
	}
	ref, err := name.ParseReference(host + "/platform/kubecel:v0.0.0-ci")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, index); err != nil {
		t.Fatal(err)
	}
	for arch, config := range configs {
		img, err := remote.Image(ref, remote.WithPlatform(v1.Platform{OS: "linux", Architecture: arch}))
		if err != nil {
			t.Fatal(err)
		}
		got, err := img.ConfigName()
		if err != nil {
			t.Fatal(err)
		}
		if got != config {
			t.Errorf("linux/%s from the index: config %s, pushed %s", arch, got, config)
		}
	}
}
