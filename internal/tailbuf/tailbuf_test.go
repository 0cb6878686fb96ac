package tailbuf

import "testing"

func TestBuffer(t *testing.T) {
	tests := []struct {
		name   string
		max    int
		writes []string
		want   string
	}{
		{"nothing", 4, nil, ""},
		{"under the limit", 8, []string{"ab", "cd"}, "abcd"},
		{"exactly the limit", 4, []string{"ab", "cd"}, "abcd"},
		{"over, across writes", 4, []string{"abc", "def"}, "cdef"},
		{"one write over", 3, []string{"abcdefg"}, "efg"},
		{"empty writes", 3, []string{"", "xy", ""}, "xy"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := New(tc.max)
			for _, w := range tc.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if got := b.String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
