package main

import (
	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/fs"
)

// The --json output of the maintenance commands. Every key the CLI prints
// is snake_case (TestJSONKeys walks them all): the reports of fs and
// chunkstore, whose fields carry no tags, are copied into these.

// newChunkStatsJSON is chunkstore.Stats as status, fsck and stats print it.
func newChunkStatsJSON(s chunkstore.Stats) chunksJSON {
	return chunksJSON{s.Chunks, s.LogicalBytes, s.UniqueBytes, s.StoredBytes, s.DedupRatio(), s.CompressionRatio()}
}

type fsckJSONOut struct {
	Workspace  string     `json:"workspace"`
	Clean      bool       `json:"clean"`
	Inodes     int        `json:"inodes"`
	Dirents    int        `json:"dirents"`
	FileChunks int        `json:"file_chunks"`
	Chunks     chunksJSON `json:"chunks"`
	Problems   []string   `json:"problems"`
	Repaired   []string   `json:"repaired"`
	Notes      []string   `json:"notes"`
}

func newFsckJSON(ws string, r *fs.CheckReport) fsckJSONOut {
	out := fsckJSONOut{ws, r.Clean(), r.Inodes, r.Dirents, r.FileChunks, newChunkStatsJSON(r.Chunks), r.Problems, r.Repaired, r.Notes}
	if out.Problems == nil {
		out.Problems = []string{}
	}
	if out.Repaired == nil {
		out.Repaired = []string{}
	}
	if out.Notes == nil {
		out.Notes = []string{}
	}
	return out
}

type statsJSONOut struct {
	Workspace     string     `json:"workspace"`
	FormatVersion int        `json:"format_version"`
	ChunkSize     int        `json:"chunk_size"`
	LimitBytes    uint64     `json:"limit_bytes"`
	Inodes        int        `json:"inodes"`
	FileBytes     uint64     `json:"file_bytes"`
	Chunks        chunksJSON `json:"chunks"`
}

func newStatsJSON(ws string, i *fs.WorkspaceInfo) statsJSONOut {
	return statsJSONOut{ws, i.FormatVersion, i.ChunkSize, i.LimitBytes, i.Inodes, i.FileBytes, newChunkStatsJSON(i.Chunks)}
}
