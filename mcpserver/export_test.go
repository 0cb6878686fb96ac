package mcpserver

// ValidateOutput is validateOutput, for the tests: TestMain sets it, so
// that every tool's answer is checked against its output schema; the
// benchmarks clear it, to measure what a user runs.
var ValidateOutput = &validateOutput
