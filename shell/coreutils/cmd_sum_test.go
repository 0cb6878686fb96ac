package coreutils

import "testing"

func TestSumGNU(t *testing.T) {
	tree := txtTree(t, map[string]string{
		"a b":      "x",
		"n\nl":     "y",
		"b\\s":     "z",
		"good.md5": "dd3d24b9fb1ad7a7d4c5b8b55b9a3e7b  a.txt\n",
		"mixed.md5": "# comment\n\n" +
			"00000000000000000000000000000000  b.txt\n" +
			"bad line\n" +
			"00000000000000000000000000000000  nofile\n",
		"junk": "junk\n",
	})
	// The right sums, from GNU itself.
	good := runGNU(t, tree, "", "md5sum", "a.txt", "b.txt", "dup.txt", "n\nl", "b\\s").stdout
	good256 := runGNU(t, tree, "", "sha256sum", "a.txt", "b.txt", "n\nl").stdout
	tags := runGNU(t, tree, "", "sha256sum", "--tag", "a.txt", "b\\s").stdout
	txtRun(t, tree, []txtCase{
		txtC("md5sum", "a.txt"),
		txtC("md5sum", "a.txt", "b.txt", "empty.txt", "bin.dat"),
		txtC("sha256sum", "a.txt", "a b", "n\nl", "b\\s"),
		txtC("md5sum", "-b", "a.txt"),
		txtC("md5sum", "-t", "a.txt"),
		txtC("md5sum", "--tag", "a.txt", "n\nl"),
		txtC("sha256sum", "--tag", "a.txt", "b\\s"),
		txtC("md5sum", "-z", "a.txt", "n\nl"),
		txtC("md5sum", "a.txt", "nofile", "src"),
		txtC("sha256sum", "link.txt"),
		txtI("hello\n", "md5sum"),
		txtI("hello\n", "sha256sum", "-", "a.txt"),
		txtI(good, "md5sum", "-c"),
		txtI(good, "md5sum", "--check", "-"),
		txtI(good256, "sha256sum", "-c"),
		txtI(tags, "sha256sum", "-c"),
		txtI(good256, "md5sum", "-c"),
		txtC("md5sum", "-c", "mixed.md5"),
		txtC("md5sum", "-c", "-w", "mixed.md5"),
		txtC("md5sum", "-c", "--quiet", "mixed.md5"),
		txtC("md5sum", "-c", "--status", "mixed.md5"),
		txtC("md5sum", "-c", "--strict", "mixed.md5"),
		txtC("md5sum", "-c", "--ignore-missing", "mixed.md5"),
		txtC("md5sum", "-c", "junk"),
		txtC("md5sum", "-c", "nofile"),
		txtC("md5sum", "-c", "junk", "mixed.md5"),
		txtI("B1946AC92492D2347C6235B4D2611184 *a.txt\nb1946ac92492d2347c6235b4d2611184 a.txt\nMD5 (a.txt) = b1946ac92492d2347c6235b4d2611184\nMD5(dup.txt)= b1946ac92492d2347c6235b4d2611184\n", "md5sum", "-c", "-w"),
		txtI("b1946ac92492d2347c6235b4d2611184  a.txt\r\n", "md5sum", "-c"),
		txtC("md5sum", "--tag", "-t", "a.txt"),
		txtC("md5sum", "-c", "-b", "junk"),
		txtC("md5sum", "-c", "--tag", "junk"),
		txtC("md5sum", "--status", "a.txt"),
		txtC("md5sum", "--strict", "a.txt"),
		txtC("md5sum", "-w", "a.txt"),
		txtC("md5sum", "--quiet", "a.txt"),
		txtC("md5sum", "--ignore-missing", "a.txt"),
		txtC("md5sum", "-x"),
	})
}
