package dynclient

import (
	"errors"
	"io"
)

// A watch response is a stream of JSON documents, one per event. client-go's JSON framer
// cuts it with encoding/json's Decoder, which runs its full scanner over every byte to find
// where a document ends, and copies it twice. frames finds the end by counting brackets
// outside strings, which is all a cut needs: the document is checked in full when it is
// decoded. A document that is not an object or an array (never sent in a watch) is an
// error here; client-go's framer would hand it to the decoder, which fails on it too.

// framer is a runtime.Framer whose reader cuts JSON documents as above and whose writer
// is client-go's.
type framer struct {
	writer interface{ NewFrameWriter(io.Writer) io.Writer }
}

func (f framer) NewFrameReader(r io.ReadCloser) io.ReadCloser { return &frames{r: r} }
func (f framer) NewFrameWriter(w io.Writer) io.Writer         { return f.writer.NewFrameWriter(w) }

// frames reads JSON documents from r, one per Read, as client-go's framer does: a
// document longer than the caller's buffer is returned in parts, each but the last with
// io.ErrShortBuffer.
type frames struct {
	r   io.ReadCloser
	buf []byte // read from r: buf[start:] is not returned yet
	// start is where the next document begins in buf, scan where the cut stopped (at
	// depth, inside a string or just after a backslash in one).
	start, scan, depth int
	inString, escaped  bool
	rest               []byte // the part of a document that did not fit the last Read
	err                error  // r's error, returned once buf holds no whole document
}

// A stream's buffer starts at minRead bytes and doubles while a document does not fit:
// a controller keeps a watch open per resource, thousands with a thousand rules, and
// most of them only ever carry small events and bookmarks. Once a buffer larger than
// keepBuffer has been read to its end it is let go, so that the initial list of a large
// resource does not stay held by its watch.
const (
	minRead    = 512
	keepBuffer = 64 << 10
)

// errNotJSONObject is returned for a document that does not start with { or [.
var errNotJSONObject = errors.New("watch stream: a document is not a JSON object")

func (f *frames) Read(data []byte) (int, error) {
	if len(f.rest) > 0 {
		n := copy(data, f.rest)
		f.rest = f.rest[n:]
		if len(f.rest) > 0 {
			return n, io.ErrShortBuffer
		}
		f.rest = nil
		return n, nil
	}
	doc, err := f.next()
	if err != nil {
		return 0, err
	}
	n := copy(data, doc)
	if n < len(doc) {
		f.rest = append([]byte(nil), doc[n:]...)
		return n, io.ErrShortBuffer
	}
	return n, nil
}

// next returns the next document, valid until the following call.
func (f *frames) next() ([]byte, error) {
	for {
		if end, ok, err := f.cut(); err != nil {
			return nil, err
		} else if ok {
			doc := f.buf[f.start:end]
			f.start, f.scan = end, end
			if end == len(f.buf) && cap(f.buf) > keepBuffer {
				// doc stays valid: only this reader's buffer is dropped
				f.buf, f.start, f.scan = nil, 0, 0
			}
			return doc, nil
		}
		if f.err != nil {
			// As encoding/json's Decoder: a document cut short by the end of the
			// stream is io.ErrUnexpectedEOF, which client-go's watch tells apart.
			if f.err == io.EOF && !blank(f.buf[f.start:]) {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, f.err
		}
		f.fill()
	}
}

// cut scans buf from where it stopped: it returns the end of the document that starts at
// start (after whitespace), or false when buf ends before it.
func (f *frames) cut() (int, bool, error) {
	for i := f.scan; i < len(f.buf); i++ {
		c := f.buf[i]
		switch {
		case f.inString:
			switch {
			case f.escaped:
				f.escaped = false
			case c == '\\':
				f.escaped = true
			case c == '"':
				f.inString = false
			}
		case c == '"':
			f.inString = true
		case c == '{' || c == '[':
			f.depth++
		case c == '}' || c == ']':
			f.depth--
			if f.depth == 0 {
				return i + 1, true, nil
			}
		case f.depth == 0 && (c == ' ' || c == '\n' || c == '\r' || c == '\t'):
			f.start = i + 1 // whitespace between documents
		case f.depth == 0:
			return 0, false, errNotJSONObject
		}
	}
	f.scan = len(f.buf)
	return 0, false, nil
}

// fill reads more of the stream, first moving what is left of buf to its front.
func (f *frames) fill() {
	if f.start > 0 {
		n := copy(f.buf, f.buf[f.start:])
		f.buf = f.buf[:n]
		f.scan -= f.start
		f.start = 0
	}
	if cap(f.buf)-len(f.buf) < minRead/2 {
		grown := make([]byte, len(f.buf), 2*cap(f.buf)+minRead)
		copy(grown, f.buf)
		f.buf = grown
	}
	n, err := f.r.Read(f.buf[len(f.buf):cap(f.buf)])
	f.buf = f.buf[:len(f.buf)+n]
	if err != nil {
		f.err = err
	}
}

func blank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\n' && c != '\r' && c != '\t' {
			return false
		}
	}
	return true
}

func (f *frames) Close() error { return f.r.Close() }
