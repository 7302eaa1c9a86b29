package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var epoch = time.Date(2026, 11, 26, 1, 56, 0, 0, time.UTC)

// TestArchivesDependOnContentAlone: the order entries come in changes nothing; the
// headers carry no owner, name or time but the commit's; the gzip header no time or name.
func TestArchivesDependOnContentAlone(t *testing.T) {
	a := []entry{file("b/x", 0o644, []byte("x")), dir("b"), file("a", 0o755, []byte("aaa"))}
	b := []entry{file("a", 0o755, []byte("aaa")), file("b/x", 0o644, []byte("x")), dir("b/")}
	ta, err := tarGz(a, epoch)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := tarGz(b, epoch)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ta, tb) {
		t.Error("the same entries in another order give another archive")
	}
	later, err := tarGz(a, epoch.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(ta, later) {
		t.Error("another time gives the same archive: the time is not in it")
	}
	zr, err := gzip.NewReader(bytes.NewReader(ta))
	if err != nil {
		t.Fatal(err)
	}
	if !zr.ModTime.IsZero() || zr.Name != "" {
		t.Errorf("gzip header: time %v, name %q", zr.ModTime, zr.Name)
	}
	tr := tar.NewReader(zr)
	type header struct {
		Name     string
		Mode     int64
		Uid, Gid int
		Uname    string
		ModTime  time.Time
		Typeflag byte
		Size     int64
		Content  string
	}
	var got []header
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		got = append(got, header{h.Name, h.Mode, h.Uid, h.Gid, h.Uname, h.ModTime.UTC(), h.Typeflag, h.Size, string(data)})
	}
	want := []header{
		{"a", 0o755, 0, 0, "", epoch, tar.TypeReg, 3, "aaa"},
		{"b/", 0o755, 0, 0, "", epoch, tar.TypeDir, 0, ""},
		{"b/x", 0o644, 0, 0, "", epoch, tar.TypeReg, 1, "x"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	if _, err := readTarGz(ta, epoch); err != nil {
		t.Errorf("Verify's reader refuses the archive: %v", err)
	}
	if _, err := readTarGz(ta, epoch.Add(time.Hour)); err == nil {
		t.Error("Verify's reader takes an archive dated at another time")
	}
}

func TestArchiveRefusesBadNames(t *testing.T) {
	for _, entries := range [][]entry{
		{file("a", 0o644, nil), file("a", 0o644, nil)},
		{file("/etc/passwd", 0o644, nil)},
		{file("../x", 0o644, nil)},
	} {
		if _, err := tarBytes(entries, epoch); err == nil {
			t.Errorf("tarBytes(%v) made an archive", entries)
		}
	}
}
