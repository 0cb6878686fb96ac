package coreutils

import "testing"

func TestEnv(t *testing.T) {
	tree := makeTree(t)
	// testEnv's variables: HOME=/, PATH=/usr/bin:/bin, LC_ALL=C.UTF-8.
	all := "HOME=/\nLC_ALL=C.UTF-8\nPATH=/usr/bin:/bin\n"
	txtExpect(t, tree, "", all, "", 0, "env")
	txtExpect(t, tree, "", "", "", 0, "env", "-i")
	txtExpect(t, tree, "", "", "", 0, "env", "-")
	txtExpect(t, tree, "", "B=2\nA=1\n", "", 0, "env", "-i", "B=2", "A=1")
	txtExpect(t, tree, "", "A=x=y\n", "", 0, "env", "-i", "A=x=y")
	txtExpect(t, tree, "", "=x\n", "", 0, "env", "-i", "=x")
	txtExpect(t, tree, "", "HOME=/\nPATH=/usr/bin:/bin\n", "", 0, "env", "-u", "LC_ALL")
	txtExpect(t, tree, "", "HOME=/\n", "", 0, "env", "--unset=LC_ALL", "-uPATH")
	txtExpect(t, tree, "", "HOME=/\nLC_ALL=C\nPATH=/usr/bin:/bin\n", "", 0, "env", "LC_ALL=C")
	txtExpect(t, tree, "", "A=1\x00", "", 0, "env", "-0", "-i", "A=1")
	txtExpect(t, tree, "", "", "env: option requires an argument -- 'u'\nTry 'env --help' for more information.\n", 125, "env", "-u")
	txtExpect(t, tree, "", "", "env: cannot unset ‘A=B’: Invalid argument\n", 125, "env", "-u", "A=B")
	txtExpect(t, tree, "", "", "env: invalid option -- 'x'\nTry 'env --help' for more information.\n", 125, "env", "-x")
	txtExpect(t, tree, "", "", "env: cannot specify --null (-0) with command\nTry 'env --help' for more information.\n", 125, "env", "-0", "true")
	txtExpect(t, tree, "", "", "env: must specify command with --chdir (-C)\nTry 'env --help' for more information.\n", 125, "env", "-C", "/")
	// Commands run through e.Run (without the variables, for now).
	txtExpect(t, tree, "", "alpha\nbeta\n", "", 0, "env", "A=1", "head", "-n2", "a.txt")
	txtExpect(t, tree, "", "alpha\n", "", 0, "env", "-i", "--", "head", "-n1", "a.txt")
	txtExpect(t, tree, "", "alpha\n", "", 0, "env", "-S", "head -n1", "a.txt")
	txtExpect(t, tree, "x y\n", "x y\n", "", 0, "env", "cat")
	txtExpect(t, tree, "", "", "nonexist: command not found\n", 127, "env", "nonexist")
	txtExpect(t, tree, "", "", "head: cannot open 'nofile' for reading: No such file or directory\n", 1, "env", "head", "nofile")
	txtExpect(t, tree, "", "", "env: --chdir (-C) is not supported\n", 125, "env", "-C", "src", "cat", "main.go")
}

func TestEnvGNU(t *testing.T) {
	tree := makeTree(t)
	txtRun(t, tree, []txtCase{
		txtC("env", "-i"),
		txtC("env", "-i", "A=1", "B=2"),
		txtC("env", "-i", "B=2", "A=1"),
		txtC("env", "-", "X=1"),
		txtC("env", "-0", "-i", "A=1"),
		txtC("env", "-u"),
		txtC("env", "-u", "A=B"),
		txtC("env", "-0", "-i", "true"),
		txtC("env", "-C", "/tmp"),
		txtC("env", "-x"),
		txtC("env", "-i", "head", "-n1", "a.txt"),
		txtC("env", "-S", "head -n1", "a.txt"),
	})
}
