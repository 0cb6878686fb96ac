package mcpserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"syscall"

	"github.com/computerfs/computerfs/workspace"
)

// grepMultiline is grep with patterns that span lines (rg -U
// --multiline-dotall): the API's grep is line by line, so the files it
// would search (the same filters, binary files skipped) are read here
// and matched whole. Content mode shows every line a match spans.
func (s *Server) grepMultiline(ctx context.Context, p string, opt workspace.GrepOptions) (workspace.GrepResult, error) {
	flags := "(?s)"
	if opt.IgnoreCase {
		flags = "(?is)"
	}
	re, err := regexp.Compile(flags + opt.Pattern)
	if err != nil {
		return workspace.GrepResult{}, fmt.Errorf("pattern: %v: %w", err, syscall.EINVAL)
	}
	var res workspace.GrepResult
	entries := 0 // lines (content) or files, before the offset is applied
	add := func() bool {
		entries++
		return entries > opt.Offset && entries <= opt.Offset+opt.Limit
	}
	// Every file the filters let through: a line grep for "" matches any
	// file with a line in it.
	files := workspace.GrepOptions{Mode: "files", Include: opt.Include, Exclude: opt.Exclude, Limit: 1000}
	for {
		page, err := s.api().Grep(ctx, p, files)
		if err != nil {
			return workspace.GrepResult{}, err
		}
		res.Skipped += page.Skipped
		for _, f := range page.Files {
			data, err := s.readSmall(ctx, f.Path)
			if err != nil {
				continue // gone, or too large: skipped as grep skips
			}
			locs := re.FindAllIndex(data, -1)
			if len(locs) == 0 {
				continue
			}
			switch opt.Mode {
			case "files", "count":
				if add() {
					res.Files = append(res.Files, workspace.GrepFile{Path: f.Path, Count: len(locs), Mtime: f.Mtime})
				}
			default:
				lastLine := 0
				for _, loc := range locs {
					first := bytes.Count(data[:loc[0]], []byte("\n")) + 1
					start := bytes.LastIndexByte(data[:loc[0]], '\n') + 1
					end := loc[1]
					if end > loc[0] && data[end-1] == '\n' {
						end-- // a match ending with its newline ends on that line
					}
					if i := bytes.IndexByte(data[end:], '\n'); i >= 0 {
						end += i
					} else {
						end = len(data)
					}
					for i, l := range bytes.Split(data[start:end], []byte("\n")) {
						n := first + i
						if n <= lastLine {
							continue // already shown for the match before
						}
						lastLine = n
						if add() {
							res.Lines = append(res.Lines, workspace.GrepLine{Path: f.Path, Line: n, Text: string(l)})
						}
					}
				}
			}
		}
		if page.Next == 0 {
			break
		}
		files.Offset = page.Next
	}
	if entries > opt.Offset+opt.Limit {
		res.Next = opt.Offset + opt.Limit
	}
	return res, nil
}

// readSmall reads a whole file of at most maxMatchBytes.
func (s *Server) readSmall(ctx context.Context, p string) ([]byte, error) {
	r, err := s.api().Read(ctx, p, workspace.ReadOptions{})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if r.Info().Size > maxMatchBytes {
		return nil, syscall.EFBIG
	}
	return io.ReadAll(io.LimitReader(r, maxMatchBytes))
}
