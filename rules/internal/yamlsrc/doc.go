// Package yamlsrc relates what the YAML parser reports to the text of the document it
// read: where in the file a character of a scalar's value stands (Position), and what
// the parser's cryptic problems mean, on the line they are really on (Problem). Both
// read the document's bytes; neither parses it again.
package yamlsrc
