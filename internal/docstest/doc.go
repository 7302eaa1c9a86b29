// Package docstest runs the kubecel commands that the documentation shows and compares
// their output with the output shown. It has no code of its own, only the test: see
// docs_test.go for the conventions a document follows.
package docstest
