package coreutils

import (
	"testing"
)

func TestTouch(t *testing.T) {
	tree := makeTree(t)
	show := []string{"stat", "-c", "%n %y %s", "a.txt", "new", "src/n2"}
	for _, c := range [][]string{
		{"touch", "-d", "2024-01-02 03:04:05", "a.txt", "new"},
		{"touch", "-d", "2024-01-02T03:04:05.123456789Z", "a.txt", "new", "src/n2"},
		{"touch", "-d", "@1700000000", "new"},
		{"touch", "-d", "2024-01-02", "a.txt"},
		{"touch", "-d", "2024-01-02 03:04", "a.txt"},
		{"touch", "-d", "Jan 2 2024", "a.txt"},
		{"touch", "-d", "2 Jan 2024 10:00", "a.txt"},
		{"touch", "-d", "2024-01-02 10:00 +0100", "a.txt"},
		{"touch", "-d", "2024-01-02 10:00:00 UTC", "a.txt"},
		{"touch", "-d", "2024-01-02 10:00:00 5 days ago", "a.txt"},
		{"touch", "-d", "2024-01-02 10:00 1 month ago", "a.txt"},
		{"touch", "--date=01/02/2024 11:00", "a.txt"},
		{"touch", "-t", "202401020304.05", "a.txt"},
		{"touch", "-t", "2401020304", "a.txt"},
		{"touch", "-t", "bad", "a.txt"},
		{"touch", "-d", "garbage", "a.txt"},
		{"touch", "-r", "b.txt", "a.txt", "new"},
		{"touch", "-r", "nonexist", "a.txt"},
		{"touch", "-m", "-d", "2024-01-02", "a.txt"},
		{"touch", "-c", "-d", "2024-01-02", "new", "a.txt"},
		{"touch", "--no-create", "new"},
		{"touch"},
		{"touch", "x/y"},
		{"touch", "new/"},
		{"touch", "a.txt/"},
		{"touch", "-d", "2020-02-30", "a.txt"},
	} {
		filCompareSeq(t, tree, c, show)
	}
	// Without a date the clocks differ: compare what exists.
	compareGNU(t, tree, "", "touch", "new", "a.txt", "src/sub/n3")
}
