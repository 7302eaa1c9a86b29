package rules

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"

	"github.com/kubecel/kubecel/rules/internal/parse"
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

// splitDocuments cuts each Document into its YAML documents (parse.Split), leaving out
// the empty ones. A Document with nothing else stays one piece, so that it is reported
// as empty.
func splitDocuments(docs []Document) []piece {
	var out []piece
	for _, d := range docs {
		parts := parse.Split(d.Data)
		if len(parts) == 0 {
			parts = []parse.Piece{{Data: d.Data}}
		}
		for _, p := range parts {
			out = append(out, piece{source: d.Source, origin: d.Origin, data: p.Data, offset: p.Offset, root: parse.Root(len(out))})
		}
	}
	return out
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
