package workspace

// Edit is one exact-string replacement of an edit call.
type Edit struct {
	// Old must occur exactly once in the file, unless ReplaceAll.
	Old string `json:"old"`
	New string `json:"new"`
	// ReplaceAll replaces every occurrence (at least one must exist).
	ReplaceAll bool `json:"replace_all,omitempty"`
}

// GrepOptions select what grep matches and how it reports it.
type GrepOptions struct {
	Pattern string `json:"pattern"`
	// Regex makes Pattern an RE2 regular expression; otherwise it is a
	// literal string.
	Regex      bool `json:"regex,omitempty"`
	IgnoreCase bool `json:"ignore_case,omitempty"`
	// Include and Exclude are glob patterns matched against the file's
	// base name when they contain no '/', else against its path relative
	// to the searched directory.
	Include []string `json:"include,omitempty"`
	Exclude []string `json:"exclude,omitempty"`
	// Before and After are lines of context (grep -B/-A).
	Before int `json:"before,omitempty"`
	After  int `json:"after,omitempty"`
	// Mode is "content" (default), "files" (files with matches) or "count".
	Mode string `json:"mode,omitempty"`
	// Limit and Offset page through the results: matching lines in
	// content mode, files otherwise. Limit 0 means the default (200).
	Limit  int `json:"limit,omitempty"`
	Offset int `json:"offset,omitempty"`
}

// GrepLine is one line of grep output: a match, or context around one.
type GrepLine struct {
	Path    string `json:"path"`
	Line    int    `json:"line"` // 1-based
	Text    string `json:"text"`
	Context bool   `json:"context,omitempty"` // a context line, not a match
}
