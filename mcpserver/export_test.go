package mcpserver

// ValidateOutput is validateOutput, for the tests: TestMain sets it, so
// that every tool's answer is checked against its output schema; the
// benchmarks clear it, to measure what a user runs.
var ValidateOutput = &validateOutput

// SetGrepScan sets how many entries grep sorts newest first before it
// goes on in path order.
func (s *Server) SetGrepScan(n int) { s.grepScanLimit = n }
