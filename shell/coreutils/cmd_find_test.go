package coreutils

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestFind(t *testing.T) {
	tree := filTree(t, map[string]string{
		"ld": "-> src", "e/f/g": "", "big": strings.Repeat("x", 5000), "Upper.TXT": "u",
		"sp ace": "s", "dang": "-> nowhere", "e/h.go": "package h\n",
	})
	old := time.Date(2020, 1, 1, 10, 0, 0, 0, time.UTC)
	os.Chtimes(filepath.Join(tree, "nums.txt"), old, old)
	os.Chtimes(filepath.Join(tree, "src/util.go"), old, old)
	os.Chmod(filepath.Join(tree, "csv.txt"), 0o600)
	sorted := [][]string{
		{"find"},
		{"find", "."},
		{"find", ".", "-name", "*.go"},
		{"find", "src", "-name", "*.go"},
		{"find", ".", "-iname", "*.txt"},
		{"find", ".", "-name", "[a-c]*"},
		{"find", ".", "-name", "[!a-c]*.txt"},
		{"find", ".", "-name", ".*"},
		{"find", ".", "-type", "f"},
		{"find", ".", "-type", "d"},
		{"find", ".", "-type", "l"},
		{"find", ".", "-type", "f,l", "-maxdepth", "1"},
		{"find", "-L", ".", "-type", "l"},
		{"find", "-L", ".", "-name", "*.go"},
		{"find", ".", "-path", "./src/*"},
		{"find", ".", "-path", "*sub*"},
		{"find", ".", "-ipath", "*SRC/M*"},
		{"find", ".", "-maxdepth", "1"},
		{"find", ".", "-mindepth", "2"},
		{"find", ".", "-mindepth", "1", "-maxdepth", "1", "-type", "d"},
		{"find", ".", "-maxdepth", "0"},
		{"find", ".", "-newer", "a.txt"},
		{"find", ".", "-newer", "nums.txt", "-type", "f"},
		{"find", ".", "-size", "+1k"},
		{"find", ".", "-size", "-1k"},
		{"find", ".", "-size", "28c"},
		{"find", ".", "-size", "+20c", "-size", "-60c"},
		{"find", ".", "-size", "1"},
		{"find", ".", "-size", "-1M"},
		{"find", ".", "-empty"},
		{"find", ".", "-empty", "-type", "f"},
		{"find", ".", "-mtime", "+2000"},
		{"find", ".", "-mtime", "+2000", "-mtime", "-20000", "-type", "f"},
		{"find", ".", "-mmin", "+3000000"},
		{"find", ".", "-mtime", "-30000", "-name", "*.go"},
		{"find", ".", "-name", "src", "-prune", "-o", "-print"},
		{"find", ".", "-name", "src", "-prune", "-o", "-name", "*.go", "-print"},
		{"find", ".", "!", "-name", "*.txt"},
		{"find", ".", "-not", "-type", "d", "-not", "-name", "*.txt"},
		{"find", ".", "(", "-name", "*.go", "-o", "-name", "*.md", ")"},
		{"find", ".", "-name", "*.go", "-or", "-name", "*.json"},
		{"find", ".", "-type", "f", "-and", "-name", "a*"},
		{"find", ".", "-type", "f", "-a", "-name", "a*", "-print"},
		{"find", ".", "-name", "*.go", "-o", "-name", "*.md", "-print"},
		{"find", "src", "a.txt", "nonexist"},
		{"find", "src/", "e//"},
		{"find", ".", "-name", "*.go", "-exec", "stat", "-c", "%n:%s", "{}", ";"},
		{"find", ".", "-name", "*.go", "-exec", "ls", "-d", "a{}b", ";"},
		{"find", ".", "-name", "*.go", "-exec", "ls", "-d", "a{}b", ";", "-o", "-print"},
		{"find", ".", "-name", "*.go", "-exec", "ls", "-d", "{}", ";", "-print"},
		{"find", ".", "-name", "*.txt", "-exec", "stat", "-c", "%n", "{}", "+"},
		{"find", ".", "-printf", "%p|%f|%h|%s|%P|%d|%m|%M|%y|%%|\\n"},
		{"find", "src", "-printf", "%-12f|%5s|%Y|%l\\n"},
		{"find", ".", "-type", "l", "-printf", "%p -> %l %Y\\n"},
		{"find", ".", "-regex", ".*\\.go"},
		{"find", ".", "-regex", "\\./\\(a\\|b\\)\\.txt"},
		{"find", ".", "-regextype", "posix-extended", "-regex", "\\./(a|b)\\.txt"},
		{"find", ".", "-iregex", ".*upper.*"},
		{"find", ".", "-perm", "644", "-type", "f"},
		{"find", ".", "-perm", "-u+x", "-type", "f"},
		{"find", ".", "-perm", "/o+w"},
		{"find", ".", "-user", "root", "-name", "a*"},
		{"find", ".", "-lname", "*.txt"},
		{"find", ".", "-name", "*.go", ",", "-name", "*.md"},
		{"find", ".", "-depth", "-name", "s*"},
		{"find", ".", "-xtype", "l"},
		{"find", ".", "-newermt", "2021-01-01", "-name", "*.go"},
		{"find", ".", "-links", "1", "-name", "a*"},
		{"find", ".", "-executable", "-type", "f"},
		{"find", "-P", "ld", "ld/"},
		{"find", "-H", "ld"},
		{"find", ".", "-false", "-o", "-true", "-name", "*.md"},
	}
	for _, c := range sorted {
		filCompareSorted(t, tree, "", c...)
	}
	exact := [][]string{
		{"find", "-foo"},
		{"find", ".", "-name"},
		{"find", ".", "-type", "x"},
		{"find", ".", "-type"},
		{"find", ".", "-type", "f,"},
		{"find", ".", "-name", "f", "g"},
		{"find", "nonexist"},
		{"find", ".", "-newer", "nonexist"},
		{"find", ".", "-size", "3x"},
		{"find", ".", "-exec", "echo"},
		{"find", ".", "(", "-name", "f"},
		{"find", ".", "-name", "f", ")"},
		{"find", ".", "-o"},
		{"find", ".", "!"},
		{"find", ".", "-mindepth"},
		{"find", ".", "-maxdepth", "x"},
		{"find", ".", "-mtime", "x"},
		{"find", ".", "(", ")"},
		{"find", ".", "-name", "a.txt", "-quit"},
		{"find", "a.txt", "-name", "*.txt", "-quit", "-print"},
		{"find", "src/main.go", "-exec", "stat", "-c", "%s", "{}", "+"},
		{"find", "src/main.go", "src/util.go", "-exec", "ls", "{}", "nonexist", "+"},
		{"find", "a.txt", "b.txt", "-exec", "ls", "{}x", ";", "-print"},
		{"find", "src", "-exec", "stat", "-c", "%n", "{}", ";", "-quit"},
		{"find", "src", "a.txt", "-name", "*.go", "-print", "-quit"},
		{"find", ".", "-type", "f,,d"},
		{"find", ".", "-type", "fd"},
		{"find", ".", "-type", ",f"},
		{"find", ".", "-type", ""},
		{"find", "a.txt", "-delete"},
		{"find", "e", "-delete"},
		{"find", "e", "-name", "f", "-delete"},
		{"find", "e", "-name", "*.go", "-delete", "-print"},
		{"find", "a.txt/"},
		{"find", "", "-name", "x"},
		{"find", ".", "-regextype", "foo"},
		{"find", ".", "-user", "nosuchuser"},
		{"find", "src/main.go", "-printf", "%s %k %b\\n"},
		{"find", "src/main.go", "-printf", "%TY-%Tm-%Td %TH:%TM|%t|%T@\\n"},
	}
	filCompareWith(t, tree, "", func(s string) string {
		l := strings.Split(s, "\x00")
		sort.Strings(l)
		return strings.Join(l, "|")
	}, "find", ".", "-print0")
	for _, c := range exact {
		compareGNU(t, tree, "", c...)
	}
}
