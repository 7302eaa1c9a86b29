package access

import (
	"testing"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m, controlplane.Options{}) }
