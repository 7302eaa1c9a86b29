package dynclient

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
)

// readAll reads frames from r into a buffer of size n, joining the parts of a frame
// that does not fit, until an error; it returns the frames and that error.
func readAll(r io.Reader, n int) ([]string, error) {
	var frames []string
	var part []byte
	buf := make([]byte, n)
	for {
		got, err := r.Read(buf)
		part = append(part, buf[:got]...)
		if errors.Is(err, io.ErrShortBuffer) {
			continue
		}
		if err != nil {
			return frames, err
		}
		frames = append(frames, string(part))
		part = nil
	}
}

// TestFramesAreClientGos: on well-formed streams, frames cuts what client-go's JSON
// framer cuts, however the stream arrives and whatever the caller's buffer.
func TestFramesAreClientGos(t *testing.T) {
	long := `{"type":"ADDED","object":{"data":"` + strings.Repeat("x", 100<<10) + `"}}`
	streams := map[string]string{
		"one per line":            `{"type":"ADDED","object":{"a":1}}` + "\n" + `{"type":"DELETED","object":{"a":[1,2]}}` + "\n",
		"no separators":           `{"a":{}}{"b":[]}[1,{"c":2}]`,
		"whitespace between":      " \t\r\n{\"a\":1}\n\n  {\"b\":2}  \n",
		"brackets in strings":     `{"s":"}{][","t":"\"}\\","u":"\\\\"}` + "\n" + `{"v":"a\"{"}`,
		"nested":                  `{"a":{"b":{"c":[[[{}]]]}}}`,
		"longer than a read":      long + "\n" + long,
		"unicode and escapes":     `{"s":"☃ \u2028 \ud83d\ude00 \n"}`,
		"empty stream":            ``,
		"only whitespace at end":  `{"a":1}` + "\n   \n",
		"many small documents":    strings.Repeat(`{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}}`+"\n", 500),
		"frame with braces at 0":  `{}` + "\n" + `[]`,
		"escaped backslash ends":  `{"a":"\\"}{"b":"\\\""}`,
		"deep array of strings":   `[` + strings.Repeat(`"]",`, 200) + `"x"]`,
		"object after long blank": strings.Repeat(" ", 70<<10) + `{"a":1}`,
	}
	for name, stream := range streams {
		for _, bufSize := range []int{7, 1024, 256 << 10} {
			for _, oneByte := range []bool{false, true} {
				read := func() io.ReadCloser {
					var r io.Reader = strings.NewReader(stream)
					if oneByte {
						r = iotest.OneByteReader(r)
					}
					return io.NopCloser(r)
				}
				want, wantErr := readAll(json.Framer.NewFrameReader(read()), bufSize)
				got, err := readAll(framer{json.Framer}.NewFrameReader(read()), bufSize)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s, buffer %d, one byte at a time %v: frames differ (-client-go +frames):\n%s", name, bufSize, oneByte, diff)
				}
				if err != wantErr {
					t.Errorf("%s, buffer %d, one byte at a time %v: error %v, client-go's %v", name, bufSize, oneByte, err, wantErr)
				}
			}
		}
	}
}

// TestFramesFail: a stream cut inside a document ends in io.ErrUnexpectedEOF, as from
// client-go's framer (its watch tells it apart), a read error comes through as it is, and
// a document that is not an object or array is refused.
func TestFramesFail(t *testing.T) {
	broken := errors.New("connection reset")
	for _, tc := range []struct {
		name   string
		r      io.Reader
		frames []string
		err    error
	}{
		{"cut inside a document", strings.NewReader(`{"a":1}` + "\n" + `{"b":[`), []string{`{"a":1}`}, io.ErrUnexpectedEOF},
		{"cut inside a string", strings.NewReader(`{"a":"}`), nil, io.ErrUnexpectedEOF},
		{"read error", io.MultiReader(strings.NewReader(`{"a":1}{"b"`), iotest.ErrReader(broken)), []string{`{"a":1}`}, broken},
		{"scalar document", strings.NewReader(`{"a":1} 42`), []string{`{"a":1}`}, errNotJSONObject},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frames, err := readAll(framer{json.Framer}.NewFrameReader(io.NopCloser(tc.r)), 64)
			if diff := cmp.Diff(tc.frames, frames); diff != "" {
				t.Errorf("frames (-want +got):\n%s", diff)
			}
			if err != tc.err {
				t.Errorf("error %v, want %v", err, tc.err)
			}
		})
	}
	if _, err := readAll(json.Framer.NewFrameReader(io.NopCloser(strings.NewReader(`{"b":[`))), 64); err != io.ErrUnexpectedEOF {
		t.Errorf("client-go's framer ends a cut document with %v; the case above assumes io.ErrUnexpectedEOF", err)
	}
}

// TestFramesWriterIsClientGos: frames are written as client-go writes them.
func TestFramesWriterIsClientGos(t *testing.T) {
	var a, b bytes.Buffer
	for _, w := range []io.Writer{json.Framer.NewFrameWriter(&a), framer{json.Framer}.NewFrameWriter(&b)} {
		if _, err := w.Write([]byte(`{"a":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	if a.String() != b.String() {
		t.Errorf("written %q, client-go writes %q", b.String(), a.String())
	}
}

// TestFramesKeepLittle: a stream of small events holds a small buffer, and one large
// document does not leave its buffer held (a controller keeps thousands of watches
// open; a 32 KiB buffer each took 16 MB at K=1,000).
func TestFramesKeepLittle(t *testing.T) {
	small := `{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}}` + "\n"
	large := `{"type":"ADDED","object":{"data":"` + strings.Repeat("x", 200<<10) + `"}}` + "\n"
	for _, tc := range []struct {
		name   string
		stream string
		most   int
	}{
		{"small events", strings.Repeat(small, 3), 2 << 10},
		{"a large document, then small ones", large + small + small, keepBuffer},
	} {
		f := framer{json.Framer}.NewFrameReader(io.NopCloser(iotest.OneByteReader(strings.NewReader(tc.stream)))).(*frames)
		if _, err := readAll(f, 1<<20); err != io.EOF {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if c := cap(f.buf); c > tc.most {
			t.Errorf("%s: the reader holds a %d-byte buffer, want at most %d", tc.name, c, tc.most)
		}
	}
}
