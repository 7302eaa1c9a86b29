// Package rulestest is the logic of kubecel test: it finds the test files (*_test.yaml),
// loads each with its rules and objects, renders every test's parent as kubecel render
// does, compares the children, status, readiness and assertions with what the test
// expects, and reports in the manner of go test; with Update it rewrites the
// expectations with what the rules compute.
package rulestest
