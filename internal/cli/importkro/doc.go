// Package importkro is the logic of kubecel import kro: it converts a kro
// ResourceGraphDefinition file into a rules file of one rule (internal/kro), prints it,
// says on the error stream what could not be converted, and fails when the converted
// rules do not load.
package importkro
