package workspace_test

import (
	"path/filepath"
	"testing"

	"github.com/computerfs/computerfs/internal/apitest"
	"github.com/computerfs/computerfs/workspace"
)

// TestConformance runs the file API's conformance suite in process.
func TestConformance(t *testing.T) {
	apitest.Run(t, func(t *testing.T, limit uint64) apitest.Env {
		f := apitest.OpenFS(t, filepath.Join(t.TempDir(), "ws.cfs"), limit)
		return apitest.Env{API: workspace.New(f, workspace.Options{}), FS: f}
	})
}
