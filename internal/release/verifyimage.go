package release

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// checkImage checks an image archive of c for linux/arch, whose binary must be bin: as
// an OCI image layout (what containerd imports) and as docker save's manifest.json (what
// docker load and crane push read), the two naming the same config and layers; the
// config (platform, user, entrypoint, labels, time); the layers' content; and, on a
// Linux host of the same architecture, the layer's binary runs.
func checkImage(_ context.Context, c Config, arch string, data, bin []byte) error {
	files, err := readTar(data, c.Time)
	if err != nil {
		return err
	}
	var ociLayout struct {
		Version string `json:"imageLayoutVersion"`
	}
	if err := json.Unmarshal(files["oci-layout"], &ociLayout); err != nil || ociLayout.Version != "1.0.0" {
		return fmt.Errorf("oci-layout is %q (%v), want imageLayoutVersion 1.0.0", files["oci-layout"], err)
	}
	dir, err := os.MkdirTemp("", "kubecel-verify-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, content, 0o644); err != nil {
			return err
		}
	}
	img, err := layoutImage(dir, c, arch)
	if err != nil {
		return fmt.Errorf("OCI layout: %w", err)
	}
	if err := checkDockerManifest(filepath.Join(dir, "archive.tar"), data, img, c); err != nil {
		return fmt.Errorf("manifest.json: %w", err)
	}
	if err := checkConfig(img, c, arch); err != nil {
		return err
	}
	layerBin, err := checkLayers(img, c)
	if err != nil {
		return err
	}
	if !bytes.Equal(layerBin, bin) {
		return fmt.Errorf("the image's %s is not the binary of kubecel_linux_%s.tar.gz", ImageEntrypoint, arch)
	}
	if runtime.GOOS == "linux" && runtime.GOARCH == arch {
		if err := checkVersion(c, layerBin); err != nil {
			return fmt.Errorf("the image's binary: %w", err)
		}
	}
	return nil
}

// layoutImage reads the layout in dir: a valid index of one image for linux/arch, named
// as docker save names it; it returns the image, itself valid.
func layoutImage(dir string, c Config, arch string) (v1.Image, error) {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, err
	}
	if err := validate.Index(idx); err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(im.Manifests) != 1 {
		return nil, fmt.Errorf("index.json lists %d manifests, want 1", len(im.Manifests))
	}
	d := im.Manifests[0]
	wantAnn := map[string]string{annotationImageName: ImageRef(c.Version), annotationRefName: c.Version}
	switch {
	case d.MediaType != types.OCIManifestSchema1:
		return nil, fmt.Errorf("index.json: manifest of media type %s, want %s", d.MediaType, types.OCIManifestSchema1)
	case d.Platform == nil || d.Platform.OS != "linux" || d.Platform.Architecture != arch:
		return nil, fmt.Errorf("index.json: platform %v, want linux/%s", d.Platform, arch)
	case !maps.Equal(d.Annotations, wantAnn):
		return nil, fmt.Errorf("index.json: annotations %v, want %v", d.Annotations, wantAnn)
	}
	img, err := idx.Image(d.Digest)
	if err != nil {
		return nil, err
	}
	return img, validate.Image(img)
}

// checkDockerManifest reads the archive as docker load and crane push do, through
// manifest.json, and checks it names img's config and layers under ImageRef.
func checkDockerManifest(path string, data []byte, img v1.Image, c Config) error {
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	tag, err := name.NewTag(ImageRef(c.Version))
	if err != nil {
		return err
	}
	timg, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		return err
	}
	if err := validate.Image(timg); err != nil {
		return err
	}
	want, err := img.Manifest()
	if err != nil {
		return err
	}
	got, err := timg.Manifest()
	if err != nil {
		return err
	}
	if got.Config.Digest != want.Config.Digest {
		return fmt.Errorf("config %s, the layout's is %s", got.Config.Digest, want.Config.Digest)
	}
	var gotLayers, wantLayers []v1.Hash
	for _, l := range got.Layers {
		gotLayers = append(gotLayers, l.Digest)
	}
	for _, l := range want.Layers {
		wantLayers = append(wantLayers, l.Digest)
	}
	if !slices.Equal(gotLayers, wantLayers) {
		return fmt.Errorf("layers %v, the layout's are %v", gotLayers, wantLayers)
	}
	return nil
}

// checkConfig checks the image's config: linux/arch, run as ImageUser with ImageEntrypoint,
// the OCI labels of c, dated at the commit.
func checkConfig(img v1.Image, c Config, arch string) error {
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	switch {
	case cf.OS != "linux" || cf.Architecture != arch:
		return fmt.Errorf("config: platform %s/%s, want linux/%s", cf.OS, cf.Architecture, arch)
	case cf.Config.User != ImageUser:
		return fmt.Errorf("config: user %q, want %q", cf.Config.User, ImageUser)
	case !slices.Equal(cf.Config.Entrypoint, []string{ImageEntrypoint}) || len(cf.Config.Cmd) != 0:
		return fmt.Errorf("config: entrypoint %q and cmd %q, want [%s] and none", cf.Config.Entrypoint, cf.Config.Cmd, ImageEntrypoint)
	case !maps.Equal(cf.Config.Labels, Labels(c)):
		return fmt.Errorf("config: labels %v, want %v", cf.Config.Labels, Labels(c))
	case !cf.Created.Time.Equal(c.Time):
		return fmt.Errorf("config: created %s, want the commit's time %s", cf.Created.Time, c.Time)
	}
	return nil
}

// checkLayers checks the two layers, each reproducible in form: the base (a CA bundle of
// at least 100 roots, a passwd entry for 65532) and the binary's, whose binary it returns.
func checkLayers(img v1.Image, c Config) ([]byte, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	if len(layers) != 2 {
		return nil, fmt.Errorf("%d layers, want 2 (base, binary)", len(layers))
	}
	var contents []map[string][]byte
	for i, l := range layers {
		mt, err := l.MediaType()
		if err != nil {
			return nil, err
		}
		if mt != types.OCILayer {
			return nil, fmt.Errorf("layer %d: media type %s, want %s", i, mt, types.OCILayer)
		}
		rc, err := l.Uncompressed()
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, err
		}
		files, err := readTar(data, c.Time)
		if err != nil {
			return nil, fmt.Errorf("layer %d: %w", i, err)
		}
		contents = append(contents, files)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(contents[0][CACertificates]) {
		return nil, fmt.Errorf("base layer: no certificate in %s", CACertificates)
	}
	if n := strings.Count(string(contents[0][CACertificates]), "BEGIN CERTIFICATE"); n < 100 {
		return nil, fmt.Errorf("base layer: %d certificates in %s, want the NSS roots (over 100)", n, CACertificates)
	}
	if !strings.Contains(string(contents[0]["etc/passwd"]), ":65532:65532:") {
		return nil, fmt.Errorf("base layer: etc/passwd has no user 65532")
	}
	bin, ok := contents[1][strings.TrimPrefix(ImageEntrypoint, "/")]
	if !ok || len(contents[1]) != 1 {
		return nil, fmt.Errorf("binary layer: holds %v, want %s alone", slices.Sorted(maps.Keys(contents[1])), ImageEntrypoint)
	}
	return bin, nil
}

// checkChart checks the chart archive: the chart kubecel at c's version and appVersion,
// which helm lint --strict passes (no warning).
func checkChart(ctx context.Context, c Config, data []byte) error {
	files, err := readTarGz(data, c.Time)
	if err != nil {
		return err
	}
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Name       string `json:"name"`
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(files["kubecel/Chart.yaml"], &meta); err != nil {
		return fmt.Errorf("kubecel/Chart.yaml: %w", err)
	}
	if meta.APIVersion != "v2" || meta.Name != "kubecel" || meta.Version != c.ChartVersion() || meta.AppVersion != c.Version {
		return fmt.Errorf("kubecel/Chart.yaml: %+v, want apiVersion v2, name kubecel, version %s, appVersion %s", meta, c.ChartVersion(), c.Version)
	}
	for _, f := range []string{"values.yaml", "values.schema.json", "templates/deployment.yaml"} {
		if _, ok := files["kubecel/"+f]; !ok {
			return fmt.Errorf("no %s", f)
		}
	}
	dir, err := os.MkdirTemp("", "kubecel-lint-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, chartArchive(c))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	return Lint(ctx, c.Helm, path)
}

// Lint runs helm lint --strict on a chart (a directory or an archive) and fails on any
// warning or error it prints.
func Lint(ctx context.Context, helm, chart string, args ...string) error {
	out, err := exec.CommandContext(ctx, helm, append([]string{"lint", "--strict", chart}, args...)...).CombinedOutput()
	if err != nil || bytes.Contains(out, []byte("[WARNING]")) || bytes.Contains(out, []byte("[ERROR]")) {
		return fmt.Errorf("helm lint --strict %s: %v\n%s", chart, err, out)
	}
	return nil
}

// checkInstall checks install.yaml: its Namespace first, every other object in it, none
// with Helm's labels, the rules ConfigMap, and the Deployment running the image of c's
// version.
func checkInstall(c Config, data []byte) error {
	objs, err := Objects(data)
	if err != nil {
		return err
	}
	if len(objs) == 0 || objs[0].GetKind() != "Namespace" || objs[0].GetName() != InstallNamespace {
		return fmt.Errorf("does not start with the Namespace %s", InstallNamespace)
	}
	var image string
	rules := false
	for _, o := range objs[1:] {
		ref := o.GetKind() + " " + o.GetName()
		if ns := o.GetNamespace(); ns != "" && ns != InstallNamespace {
			return fmt.Errorf("%s is in namespace %s, want %s", ref, ns, InstallNamespace)
		}
		for _, l := range helmLabels {
			if _, ok := o.GetLabels()[l]; ok {
				return fmt.Errorf("%s has Helm's label %s", ref, l)
			}
		}
		switch {
		case o.GetKind() == "ConfigMap" && o.GetName() == "kubecel-rules":
			rules = true
		case o.GetKind() == "Deployment" && o.GetName() == "kubecel":
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			if len(containers) == 1 {
				image, _ = containers[0].(map[string]any)["image"].(string)
			}
		}
	}
	if !rules {
		return fmt.Errorf("no ConfigMap kubecel-rules")
	}
	if image != ImageRef(c.Version) {
		return fmt.Errorf("the Deployment kubecel runs image %q, want %s", image, ImageRef(c.Version))
	}
	return nil
}
