package parse

import (
	"bytes"
	"strings"
)

// Piece is one YAML document of a file: the unit that File decodes.
type Piece struct {
	Data []byte
	// Offset is the number of lines of the file before the piece.
	Offset int
}

// Split cuts data at its document separators: lines that hold --- and nothing else but
// a comment. Empty documents (nothing but blank lines and comments) are left out.
func Split(data []byte) []Piece {
	var out []Piece
	start, startLine, line := 0, 0, 0
	keep := func(end int) {
		if chunk := data[start:end]; !blankYAML(chunk) {
			out = append(out, Piece{Data: chunk, Offset: startLine})
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
