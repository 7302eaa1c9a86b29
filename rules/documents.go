package rules

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"strings"
)

// Document is one named piece of a rule set: a file, a ConfigMap key, the standard
// input. Its data may hold several YAML documents separated by --- lines.
type Document struct {
	// Source names the document in messages, e.g. "rules/web.yaml" or
	// "configmap team-a/rules key web.yaml". Errors and rules carry it.
	Source string
	// Origin, when set, binds the children of the document's rules to where they came
	// from: a rule of the same name from another origin never counts them as its own
	// (Rule.Origin). Sources that different teams may write set it.
	Origin string
	Data   []byte
}

// piece is one YAML document of a Document: the unit that parseFile decodes.
type piece struct {
	source string
	origin string
	data   []byte
	// offset is the number of lines of the Document before the piece.
	offset int
	// root prefixes every path inside the piece, so that the paths of the pieces of a
	// rule set never collide.
	root path
}

// splitDocuments cuts each Document into its YAML documents, leaving out the empty
// ones (nothing but blank lines and comments). A Document with nothing else stays one
// piece, so that it is reported as empty.
func splitDocuments(docs []Document) []piece {
	var out []piece
	for _, d := range docs {
		parts := splitYAML(d.Data)
		if len(parts) == 0 {
			parts = []piece{{data: d.Data}}
		}
		for _, p := range parts {
			p.source = d.Source
			p.origin = d.Origin
			p.root = path("#" + strconv.Itoa(len(out)))
			out = append(out, p)
		}
	}
	return out
}

// splitYAML cuts data at its document separators: lines that hold --- and nothing
// else but a comment. Empty documents are left out.
func splitYAML(data []byte) []piece {
	var out []piece
	start, startLine, line := 0, 0, 0
	keep := func(end int) {
		if chunk := data[start:end]; !blankYAML(chunk) {
			out = append(out, piece{data: chunk, offset: startLine})
		}
	}
	for pos := 0; pos < len(data); line++ {
		end := bytes.IndexByte(data[pos:], '\n')
		next := len(data)
		if end >= 0 {
			next = pos + end + 1
		}
		if isSeparator(data[pos:next]) {
			keep(pos)
			start, startLine = next, line+1
		}
		pos = next
	}
	keep(len(data))
	return out
}

// isSeparator reports whether a line starts a new YAML document.
func isSeparator(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte("---"))
	if !ok {
		return false
	}
	rest = bytes.TrimSpace(rest)
	return len(rest) == 0 || (rest[0] == '#' && len(line) > 3 && (line[3] == ' ' || line[3] == '\t'))
}

// blankYAML reports whether a YAML document holds only blank lines and comments.
func blankYAML(data []byte) bool {
	for _, line := range strings.Split(string(data), "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			return false
		}
	}
	return true
}

// pieceOf returns the index of the piece a path belongs to, or -1.
func pieceOf(p path) int {
	s, ok := strings.CutPrefix(string(p), "#")
	if !ok {
		return -1
	}
	if i := strings.IndexAny(s, ".["); i >= 0 {
		s = s[:i]
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

// documentsHash identifies the documents of a rule set: the sha256 of the bytes of a
// single document (what sha256sum prints for a rules file), else the sha256 of every
// document's source and bytes, in order.
func documentsHash(docs []Document) string {
	if len(docs) == 1 {
		sum := sha256.Sum256(docs[0].Data)
		return hex.EncodeToString(sum[:])
	}
	h := sha256.New()
	for _, d := range docs {
		for _, part := range [][]byte{[]byte(d.Source), d.Data} {
			var n [8]byte
			binary.BigEndian.PutUint64(n[:], uint64(len(part)))
			h.Write(n[:])
			h.Write(part)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// place names where a path of a piece is, for messages: "web.yaml:12", "line 12", or
// the source alone when the line is unknown.
func place(p piece, line int) string {
	switch {
	case line > 0 && p.source != "":
		return p.source + ":" + strconv.Itoa(line+p.offset)
	case line > 0:
		return "line " + strconv.Itoa(line+p.offset)
	case p.source != "":
		return p.source
	}
	return "the rules"
}
