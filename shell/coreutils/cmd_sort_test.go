package coreutils

import (
	"math/rand"
	"sort"
	"strings"
	"testing"
)

func TestSortGNU(t *testing.T) {
	tree := txtTree(t, map[string]string{
		"people.txt": "bob 25 rome\nann 31 paris\ncid 40 oslo\nAnn 31 berlin\ndan 5 rome\n  eve 25 nice\nbob 25 athens\n",
		"mixed.txt":  "10\n9\n-3\n2.5\n+4\n abc\n0\n-0\n.5\n1e3\n0x10\n\n-\n10.0\n007\nxyz\n  42\n-1.5\n",
		"human.txt":  "1K\n2\n1.5M\n-1G\n0K\n\n3k\n10G\n999\n1.1K\n",
		"months.txt": "mar\nJan\n  feb\nDEC\nxyz\napril\nMay\n",
		"vers.txt":   "file-1.10.tar.gz\nfile-1.2.tar.gz\nfile-1.9~rc1.tar.gz\nfile-1.9.tar.gz\n.hidden\n..\n.\nfile-1.02\nfile\n",
		"tabs.txt":   "a\tz\t3\nb\ty\t1\nc\tx\t2\na\ty\t10\n",
		"case.txt":   "B\na\nA\nb\nc\nC\n_x\n!y\n",
		"dupk.txt":   "x 1\nx 01\nx 1.0\ny 2\nx 1\n",
		"sorted.txt": "a\nb\nb\nc\n",
		"gen.txt":    "1e2\n5\nnan\n-inf\ninf\nabc\n0x1p3\n-2.5e-1\n1E1\n",
		"blank.txt":  "  b 2\n a 3\nc  1\n\tz 0\n",
		"dict.txt":   "a-b\nab\na b\n@ab\na_c\naB\n",
	})
	txtRun(t, tree, []txtCase{
		txtC("sort", "a.txt"),
		txtC("sort", "b.txt", "a.txt"),
		txtC("sort", "-r", "b.txt"),
		txtC("sort", "-n", "nums.txt"),
		txtC("sort", "-n", "mixed.txt"),
		txtC("sort", "-nr", "mixed.txt"),
		txtC("sort", "-n", "-s", "mixed.txt"),
		txtC("sort", "-nu", "mixed.txt"),
		txtC("sort", "-g", "gen.txt"),
		txtC("sort", "-g", "mixed.txt"),
		txtC("sort", "-h", "human.txt"),
		txtC("sort", "-hr", "human.txt"),
		txtC("sort", "-M", "months.txt"),
		txtC("sort", "-Mr", "months.txt"),
		txtC("sort", "-V", "vers.txt"),
		txtC("sort", "--version-sort", "-r", "vers.txt"),
		txtC("sort", "-u", "dup.txt"),
		txtC("sort", "-f", "case.txt"),
		txtC("sort", "-fu", "case.txt"),
		txtC("sort", "-f", "-s", "case.txt"),
		txtC("sort", "-d", "dict.txt"),
		txtC("sort", "-i", "bin.dat", "dict.txt"),
		txtC("sort", "-df", "dict.txt"),
		txtC("sort", "-k2", "people.txt"),
		txtC("sort", "-k2,2", "people.txt"),
		txtC("sort", "-k2,2n", "people.txt"),
		txtC("sort", "-k2,2n", "-k1,1", "people.txt"),
		txtC("sort", "-k2n,2", "-k3r", "people.txt"),
		txtC("sort", "-k2,2nr", "-k1,1f", "people.txt"),
		txtC("sort", "-k2,2", "-s", "people.txt"),
		txtC("sort", "-k2,2n", "-u", "people.txt"),
		txtC("sort", "-k1.2", "people.txt"),
		txtC("sort", "-k1.2,1.3", "people.txt"),
		txtC("sort", "-k1.2b,1.3", "people.txt"),
		txtC("sort", "-b", "-k1,1", "people.txt"),
		txtC("sort", "-k1b,1", "blank.txt"),
		txtC("sort", "-k2", "blank.txt"),
		txtC("sort", "-k2n", "blank.txt"),
		txtC("sort", "-k3,3", "-k1,1", "people.txt"),
		txtC("sort", "-k4", "people.txt"),
		txtC("sort", "-k3.2,3.1", "people.txt"),
		txtC("sort", "-t,", "-k2", "csv.txt"),
		txtC("sort", "-t", ",", "-k2,2n", "csv.txt"),
		txtC("sort", "-t,", "-k3,3r", "csv.txt"),
		txtC("sort", "-t,", "-k2.1,2.1", "-k1", "csv.txt"),
		txtC("sort", "-t\t", "-k3n", "tabs.txt"),
		txtC("sort", "-t\t", "-k2,2", "-k3,3n", "tabs.txt"),
		txtC("sort", "--field-separator=\t", "--key=3,3n", "--reverse", "tabs.txt"),
		txtC("sort", "-k2,2", "-r", "people.txt"),
		txtC("sort", "-rk2,2", "-k1", "people.txt"),
		txtC("sort", "-n", "-k2", "people.txt"),
		txtC("sort", "-z", "bin.dat"),
		txtC("sort", "noeol.txt", "a.txt"),
		txtC("sort", "-m", "sorted.txt", "a.txt"),
		txtC("sort", "-m", "-u", "sorted.txt", "sorted.txt"),
		txtC("sort", "-c", "sorted.txt"),
		txtC("sort", "-c", "a.txt"),
		txtC("sort", "-C", "a.txt"),
		txtC("sort", "-cu", "sorted.txt"),
		txtC("sort", "-c", "-n", "nums.txt"),
		txtC("sort", "--check=quiet", "a.txt"),
		txtC("sort", "-c", "a.txt", "b.txt"),
		txtC("sort", "-c", "-C", "a.txt"),
		txtC("sort", "-o", "out.txt", "b.txt"),
		txtC("sort", "-o", "b.txt", "b.txt"),
		txtC("sort", "-o", "nodir/x", "b.txt"),
		txtC("sort", "--sort=numeric", "nums.txt"),
		txtC("sort", "-S", "1M", "-T", "/tmp", "--parallel=2", "a.txt"),
		txtC("sort", "empty.txt"),
		txtC("sort", "nofile"),
		txtC("sort", "a.txt", "nofile"),
		txtC("sort", "src"),
		txtC("sort", "-x"),
		txtC("sort", "-k0"),
		txtC("sort", "-k1.0"),
		txtC("sort", "-k1,0"),
		txtC("sort", "-kx"),
		txtC("sort", "-k1,x"),
		txtC("sort", "-k1.x"),
		txtC("sort", "-k1y"),
		txtC("sort", "-t", "ab"),
		txtC("sort", "-t", ""),
		txtC("sort", "-gn", "a.txt"),
		txtC("sort", "-k1,1dn", "a.txt"),
		txtC("sort", "-t,", "-t;", "a.txt"),
		txtI("c\nb\na\n", "sort"),
		txtI("c\nb\na\n", "sort", "-", "a.txt"),
		txtI("b\na\n", "sort", "-c"),
		txtI("x\xff\né\nz\nE\n", "sort"),
	})
}

func TestSortRandom(t *testing.T) {
	tree := makeTree(t)
	o := runOurs(t, tree, "", "sort", "-R", "b.txt")
	got := strings.Split(strings.TrimSuffix(o.stdout, "\n"), "\n")
	sort.Strings(got)
	want := runOurs(t, tree, "", "sort", "b.txt").stdout
	if strings.Join(got, "\n")+"\n" != want || o.code != 0 {
		t.Errorf("sort -R is not a permutation: %s", o)
	}
}

// TestSortFuzz compares sort, uniq, cut and wc with GNU on random
// lines.
func TestSortFuzz(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	for seed := int64(1); seed <= 1; seed++ {
		rng := rand.New(rand.NewSource(seed))
		words := []string{"a", "B", "b", "10", "9", "-3", "2.5", " x", "\tz", "1K", "2M", "Jan", "feb", "v1.2", "v1.10", "", "0", "-0", "a-b", "é", "A", "1e3", " 42", "x y", "x  y", "3,1"}
		var lines []string
		for i := 0; i < 300; i++ {
			n := 1 + rng.Intn(4)
			var parts []string
			for j := 0; j < n; j++ {
				parts = append(parts, words[rng.Intn(len(words))])
			}
			sep := []string{" ", ",", "\t", "  "}[rng.Intn(4)]
			lines = append(lines, strings.Join(parts, sep))
		}
		input := strings.Join(lines, "\n") + "\n"
		tree := makeTree(t)
		optsList := [][]string{
			{}, {"-n"}, {"-r"}, {"-f"}, {"-d"}, {"-i"}, {"-b"}, {"-g"}, {"-h"}, {"-M"}, {"-V"}, {"-u"}, {"-s"},
			{"-k2"}, {"-k2,2"}, {"-k2n"}, {"-k2,2n", "-k1"}, {"-t,", "-k2"}, {"-t,", "-k2,2nr"}, {"-k1.2,1.3"},
			{"-k2b"}, {"-bk2.2"}, {"-k3,3", "-s"}, {"-nu"}, {"-fu"}, {"-k1,1", "-u"}, {"-t\t", "-k2"}, {"-k2,2h"},
			{"-k2V"}, {"-k2M", "-r"}, {"-db"}, {"-k1.3b,2.2"}, {"-n", "-k2"}, {"-gr"}, {"-k2.5"}, {"-k2,1"}, {"-k1,1", "-k2,2n", "-r"},
		}
		for _, o := range optsList {
			args := append([]string{"sort"}, o...)
			compareGNU(t, tree, input, args...)
		}
		for _, o := range [][]string{{}, {"-c"}, {"-d"}, {"-u"}, {"-i"}, {"-f1"}, {"-s1"}, {"-w1"}, {"-ic"}, {"-D"}} {
			compareGNU(t, tree, runGNU(t, tree, input, "sort").stdout, append([]string{"uniq"}, o...)...)
		}
		for _, o := range [][]string{{"-c2-5"}, {"-f2", "-d", " "}, {"-f1,3-", "-d,"}, {"-s", "-f2", "-d,"}, {"--complement", "-f1", "-d", " "}} {
			compareGNU(t, tree, input, append([]string{"cut"}, o...)...)
		}
		for _, o := range [][]string{{}, {"-m"}, {"-L"}, {"-w"}} {
			compareGNU(t, tree, input, append([]string{"wc"}, o...)...)
		}
	}
}
