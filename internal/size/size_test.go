package size

import "testing"

func TestParseFormat(t *testing.T) {
	for s, want := range map[string]uint64{
		"4096": 4096, "10G": 10 << 30, "512MiB": 512 << 20, "16m": 16 << 20,
		"1.5T": 3 << 39, "64k": 64 << 10, "2GB": 2 << 30, " 7 ": 7,
	} {
		got, err := Parse(s)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "lots", "-1G", "1X", "G"} {
		if got, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) = %d, want an error", s, got)
		}
	}
	for n, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1 << 20: "1.0 MiB", 10 << 30: "10.0 GiB", 3 << 39: "1.5 TiB"} {
		if got := Format(n); got != want {
			t.Errorf("Format(%d) = %q, want %q", n, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"4096", "10G", "1.5T", "-1", "1e30G", "NaN", "Inf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		Parse(s)
	})
}
