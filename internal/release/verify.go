package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Verify checks the artefacts of c in c.Dist as their users would meet them, and returns
// every problem it finds (nil when there is none):
//
//   - SHA256SUMS lists every artefact and nothing else, and each sum verifies;
//   - every archive is reproducible in form: entries sorted, owned by 0:0, dated at
//     c.Time, gzip headers without time or name;
//   - each binary is an ELF or Mach-O executable of its platform's architecture, a Linux
//     one static; the host's one runs `version -o json` and reports c's version, commit
//     and state;
//   - each image archive (checkImage) holds that binary, runnable as the image's entrypoint;
//   - the chart carries c's version and passes helm lint --strict;
//   - install.yaml starts with its Namespace and runs the image of c's version.
func Verify(ctx context.Context, c Config) error {
	if err := c.validate(); err != nil {
		return err
	}
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	files, err := checkSums(c.Dist)
	if err != nil {
		return err
	}
	var want []string
	for _, p := range c.Platforms {
		want = append(want, binaryArchive(p))
		if p.OS == "linux" {
			want = append(want, imageArchive(p.Arch))
		}
	}
	want = append(want, chartArchive(c), installYAML)
	var got []string
	for n := range files {
		got = append(got, n)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) {
		fail("SHA256SUMS lists %v, want %v", got, want)
	}
	for _, p := range c.Platforms {
		data, ok := files[binaryArchive(p)]
		if !ok {
			continue
		}
		bin, err := checkBinaryArchive(c, p, data)
		if err != nil {
			fail("%s: %w", binaryArchive(p), err)
			continue
		}
		if p.OS != "linux" {
			continue
		}
		if img, ok := files[imageArchive(p.Arch)]; ok {
			if err := checkImage(ctx, c, p.Arch, img, bin); err != nil {
				fail("%s: %w", imageArchive(p.Arch), err)
			}
		}
	}
	if data, ok := files[chartArchive(c)]; ok {
		if err := checkChart(ctx, c, data); err != nil {
			fail("%s: %w", chartArchive(c), err)
		}
	}
	if data, ok := files[installYAML]; ok {
		if err := checkInstall(c, data); err != nil {
			fail("%s: %w", installYAML, err)
		}
	}
	return errors.Join(errs...)
}

// checkSums reads SHA256SUMS and the files it lists, and checks each sum and that the
// directory holds no other artefact.
func checkSums(dist string) (map[string][]byte, error) {
	list, err := os.ReadFile(filepath.Join(dist, sumsFile))
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, line := range strings.Split(strings.TrimSuffix(string(list), "\n"), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok || len(sum) != 64 || name == "" {
			return nil, fmt.Errorf("%s: line %q is not \"<sha256>  <name>\"", sumsFile, line)
		}
		data, err := os.ReadFile(filepath.Join(dist, name))
		if err != nil {
			return nil, fmt.Errorf("%s lists %s: %w", sumsFile, name, err)
		}
		if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != sum {
			return nil, fmt.Errorf("%s: sha256 %x, %s says %s", name, got, sumsFile, sum)
		}
		files[name] = data
	}
	entries, err := os.ReadDir(dist)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if _, listed := files[e.Name()]; isArtefact(e.Name()) && e.Name() != sumsFile && !listed {
			return nil, fmt.Errorf("%s is not in %s", e.Name(), sumsFile)
		}
	}
	return files, nil
}

// readTar returns the regular files of a tar stream, and checks the stream's form:
// entries sorted, owned by 0:0 without names, dated at mtime.
func readTar(data []byte, mtime time.Time) (map[string][]byte, error) {
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(data))
	prev := ""
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		switch {
		case h.Name <= prev:
			return nil, fmt.Errorf("entry %s after %s: not sorted", h.Name, prev)
		case h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "":
			return nil, fmt.Errorf("entry %s: owner %d:%d (%q:%q), want 0:0 and no names", h.Name, h.Uid, h.Gid, h.Uname, h.Gname)
		case !h.ModTime.Equal(mtime):
			return nil, fmt.Errorf("entry %s: dated %s, want the commit's time %s", h.Name, h.ModTime.UTC(), mtime.UTC())
		}
		prev = h.Name
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if files[h.Name], err = io.ReadAll(tr); err != nil {
			return nil, err
		}
	}
}

// gunzip decompresses data and checks that its header has no time, name or comment.
func gunzip(data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	if !zr.ModTime.IsZero() || zr.Name != "" || zr.Comment != "" {
		return nil, fmt.Errorf("gzip header: time %v, name %q, comment %q; want none", zr.ModTime, zr.Name, zr.Comment)
	}
	return io.ReadAll(zr)
}

// readTarGz is readTar of a gzip stream checked by gunzip.
func readTarGz(data []byte, mtime time.Time) (map[string][]byte, error) {
	t, err := gunzip(data)
	if err != nil {
		return nil, err
	}
	return readTar(t, mtime)
}

// checkBinaryArchive checks a binary archive and returns its binary.
func checkBinaryArchive(c Config, p Platform, data []byte) ([]byte, error) {
	files, err := readTarGz(data, c.Time)
	if err != nil {
		return nil, err
	}
	var names []string
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"LICENSE", "kubecel"}) {
		return nil, fmt.Errorf("holds %v, want [LICENSE kubecel]", names)
	}
	bin := files["kubecel"]
	if err := CheckExecutable(bin, p); err != nil {
		return nil, err
	}
	if p == (Platform{runtime.GOOS, runtime.GOARCH}) {
		if err := checkVersion(c, bin); err != nil {
			return nil, err
		}
	}
	return bin, nil
}

var elfMachines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
var machoCPUs = map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}

// CheckExecutable checks that bin is an executable for p: a 64-bit static ELF
// executable of p's machine for linux (no interpreter, no shared libraries), a Mach-O
// executable of p's CPU for darwin.
func CheckExecutable(bin []byte, p Platform) error {
	switch p.OS {
	case "linux":
		f, err := elf.NewFile(bytes.NewReader(bin))
		if err != nil {
			return fmt.Errorf("not an ELF file: %w", err)
		}
		defer f.Close()
		if f.Class != elf.ELFCLASS64 || f.Type != elf.ET_EXEC || f.Machine != elfMachines[p.Arch] {
			return fmt.Errorf("ELF %s %s %s, want a 64-bit executable for %s", f.Class, f.Type, f.Machine, elfMachines[p.Arch])
		}
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP || prog.Type == elf.PT_DYNAMIC {
				return fmt.Errorf("dynamically linked (%s), want a static binary", prog.Type)
			}
		}
	case "darwin":
		f, err := macho.NewFile(bytes.NewReader(bin))
		if err != nil {
			return fmt.Errorf("not a Mach-O file: %w", err)
		}
		defer f.Close()
		if f.Type != macho.TypeExec || f.Cpu != machoCPUs[p.Arch] {
			return fmt.Errorf("Mach-O %s for %s, want an executable for %s", f.Type, f.Cpu, machoCPUs[p.Arch])
		}
	default:
		return fmt.Errorf("no check for %s", p)
	}
	return nil
}

// versionOutput is what kubecel version -o json prints.
type versionOutput struct {
	Version   string `json:"version"`
	Revision  string `json:"revision"`
	Dirty     bool   `json:"dirty"`
	GoVersion string `json:"goVersion"`
}

// checkVersion runs bin version -o json and checks that it reports c's version, commit
// and state.
func checkVersion(c Config, bin []byte) error {
	out, err := RunBinary(bin, "version", "-o", "json")
	if err != nil {
		return err
	}
	var got versionOutput
	if err := json.Unmarshal(out, &got); err != nil {
		return fmt.Errorf("kubecel version -o json printed %q: %w", out, err)
	}
	if got.Version != c.Version || got.Revision != c.Revision || got.Dirty != c.Modified {
		return fmt.Errorf("kubecel version reports %s at %s (dirty %v), want %s at %s (dirty %v)",
			got.Version, got.Revision, got.Dirty, c.Version, c.Revision, c.Modified)
	}
	return nil
}

// RunBinary writes bin to a temporary file, runs it with args and returns its stdout.
func RunBinary(bin []byte, args ...string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "kubecel-run-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "kubecel")
	if err := os.WriteFile(path, bin, 0o755); err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd := exec.Command(path, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kubecel %s: %w\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}
