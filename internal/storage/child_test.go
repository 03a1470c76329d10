package storage

func runChild() bool { return false }
