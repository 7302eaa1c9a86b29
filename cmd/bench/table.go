package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// The bench keeps two tables of runs in docs/benchmarks.md, one per heading. A row goes
// at the end of its own table, wherever the table is in the file, so that either table
// can grow while the other follows it.

// addRow adds row at the end of the table under heading in the markdown file at path.
// A file without heading gets header (which holds heading and the table's head) and the
// row at its end.
func addRow(path, heading, header, row string) error {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	out, err := insertRow(string(data), heading, header, row)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return writeAtomically(path, []byte(out))
}

// insertRow returns doc with row after the last line of the first table that follows
// heading; without heading, doc with header and row at its end.
func insertRow(doc, heading, header, row string) (string, error) {
	at := strings.Index(doc, heading)
	if at < 0 {
		if doc != "" && !strings.HasSuffix(doc, "\n") {
			doc += "\n"
		}
		return doc + header + row, nil
	}
	lines := strings.SplitAfter(doc[at+len(heading):], "\n")
	pos, inTable := at+len(heading), false
	for _, line := range lines {
		isRow := strings.HasPrefix(line, "|")
		if inTable && !isRow {
			break
		}
		inTable = inTable || isRow
		pos += len(line)
	}
	if !inTable {
		return "", fmt.Errorf("no table after %q", strings.TrimSpace(heading))
	}
	before := doc[:pos]
	if !strings.HasSuffix(before, "\n") {
		before += "\n"
	}
	return before + row + doc[pos:], nil
}

// tableRows returns the cells of each row of the first table after heading in doc,
// without its head (column names and the |---| line).
func tableRows(doc, heading string) [][]string {
	at := strings.Index(doc, heading)
	if at < 0 {
		return nil
	}
	var rows [][]string
	inTable := false
	for _, line := range strings.Split(doc[at+len(heading):], "\n") {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows = append(rows, cells)
	}
	if len(rows) <= 2 {
		return nil
	}
	return rows[2:]
}
