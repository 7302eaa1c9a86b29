package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
)

// entry is one file or directory of an archive.
type entry struct {
	name string // slash-separated, relative; a directory ends in /
	mode int64
	data []byte
}

func file(name string, mode int64, data []byte) entry {
	return entry{name: name, mode: mode, data: data}
}

func dir(name string) entry { return entry{name: strings.TrimSuffix(name, "/") + "/", mode: 0o755} }

// tarBytes writes entries as a tar stream that depends on their content alone: sorted by
// name, owned by 0:0 with no user or group names, every time mtime, USTAR headers.
func tarBytes(entries []entry, mtime time.Time) ([]byte, error) {
	sorted := slices.Clone(entries)
	slices.SortFunc(sorted, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i, e := range sorted {
		if i > 0 && sorted[i-1].name == e.name {
			return nil, fmt.Errorf("archive: %s twice", e.name)
		}
		if path.IsAbs(e.name) || strings.Contains(e.name, "..") {
			return nil, fmt.Errorf("archive: %s is not a relative path", e.name)
		}
		h := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			ModTime: mtime.UTC(),
			Format:  tar.FormatUSTAR,
		}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("archive: %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// gzipBytes compresses data with no name, comment or time in the gzip header.
func gzipBytes(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// tarGz is tarBytes compressed by gzipBytes.
func tarGz(entries []entry, mtime time.Time) ([]byte, error) {
	t, err := tarBytes(entries, mtime)
	if err != nil {
		return nil, err
	}
	return gzipBytes(t)
}
