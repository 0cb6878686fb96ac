package coreutils

import (
	"math/rand"
	"testing"
)

func TestTrGNU(t *testing.T) {
	tree := makeTree(t)
	in := "Hello, World! 123\n\taabbcc  dd\n[x]-y\\z\x01\xff\n"
	txtRun(t, tree, []txtCase{
		txtI(in, "tr", "a-z", "A-Z"),
		txtI(in, "tr", "[:lower:]", "[:upper:]"),
		txtI(in, "tr", "[:upper:]", "[:lower:]"),
		txtI(in, "tr", "a-z", "A-C"),
		txtI(in, "tr", "-t", "a-z", "A-C"),
		txtI(in, "tr", "abc", "x"),
		txtI(in, "tr", "-d", "a-z"),
		txtI(in, "tr", "-d", "[:digit:][:space:]"),
		txtI(in, "tr", "-d", "[:punct:]"),
		txtI(in, "tr", "-cd", "[:alnum:]\n"),
		txtI(in, "tr", "-Cd", "a-z"),
		txtI(in, "tr", "-s", "a-z"),
		txtI(in, "tr", "-s", " "),
		txtI(in, "tr", "-s", "[:space:]"),
		txtI(in, "tr", "-s", "ab", "xy"),
		txtI(in, "tr", "-ds", "a", "b"),
		txtI(in, "tr", "-c", "a-z\n", "_"),
		txtI(in, "tr", "-cs", "[:alpha:]", "\n"),
		txtI(in, "tr", "-c", "[:alpha:]", "[x*]"),
		txtI(in, "tr", "a-f", "[x*2]y[z*]"),
		txtI(in, "tr", "a-z", "[n*13][m*]"),
		txtI(in, "tr", "lo", "[0*]"),
		txtI(in, "tr", "[=l=]", "L"),
		txtI(in, "tr", "\\n\\t\\\\", "NT/"),
		txtI(in, "tr", "\\141\\142", "\\060\\61"),
		txtI(in, "tr", "[]", "()"),
		txtI(in, "tr", "[x", "<X"),
		txtI(in, "tr", "-", "_"),
		txtI(in, "tr", "a-", "_+"),
		txtI(in, "tr", "\\-a", "_A"),
		txtI(in, "tr", "\\001\\377", "AB"),
		txtI(in, "tr", "a\\", "xy"),
		txtI(in, "tr", "\\400", "y"),
		txtI(in, "tr", "", ""),
		txtI(in, "tr", "[:alpha:]", "x"),
		txtI(in, "tr", "[:xdigit:][:blank:][:cntrl:]", "."),
		txtI(in, "tr", "[:graph:]", "[:print:]"),
		txtI(in, "tr"),
		txtI(in, "tr", "a"),
		txtI(in, "tr", "-d", "a", "b"),
		txtI(in, "tr", "-ds", "a"),
		txtI(in, "tr", "-s", "a", "b", "c"),
		txtI(in, "tr", "z-a", "x"),
		txtI(in, "tr", "[:foo:]", "x"),
		txtI(in, "tr", "[::]", "x"),
		txtI(in, "tr", "a", "[:alpha:]"),
		txtI(in, "tr", "[:upper:]", "[:lower:][:upper:]"),
		txtI(in, "tr", "ab", "[:upper:]"),
		txtI(in, "tr", "-c", "[:alpha:]", "ab"),
		txtI(in, "tr", "[a*]", "x"),
		txtI(in, "tr", "a", "[b*x]"),
		txtI(in, "tr", "a", ""),
		txtI(in, "tr", "a", "[=b=]"),
		txtI(in, "tr", "-d", "a", "[b*]"),
		txtI(in, "tr", "-x"),
		txtI(in, "tr", "[:upper:]", "-x-z"),
		txtI(in, "tr", "-cd", "\\n[:lower:]", "-[:space:]"),
		txtI(in, "tr", "a", "-d"),
		txtI(in, "tr", "--", "-a", "x"),
	})
}

// TestTrFuzz compares tr with GNU on random sets.
func TestTrFuzz(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	rng := rand.New(rand.NewSource(7))
	pieces := []string{"a", "b", "z", "a-c", "x-z", "[:alpha:]", "[:digit:]", "[:upper:]", "[:lower:]", "[:space:]", "\\n", "\\\\", "[x*2]", "[y*]", "-", "[", "]", "\\055", "[=a=]", "0-9", "A-Z", "ab", " "}
	input := "Hello, World! abc xyz 0123 [a-z] \\ \n\tTAB end\n"
	tree := makeTree(t)
	flags := [][]string{{}, {"-d"}, {"-s"}, {"-c"}, {"-cd"}, {"-ds"}, {"-cs"}, {"-t"}}
	for i := 0; i < 150; i++ {
		s1, s2 := "", ""
		for j := rng.Intn(3) + 1; j > 0; j-- {
			s1 += pieces[rng.Intn(len(pieces))]
		}
		for j := rng.Intn(3); j > 0; j-- {
			s2 += pieces[rng.Intn(len(pieces))]
		}
		f := flags[rng.Intn(len(flags))]
		args := append([]string{"tr"}, f...)
		args = append(args, s1)
		if rng.Intn(4) > 0 {
			args = append(args, s2)
		}
		compareGNU(t, tree, input, args...)
	}
}
