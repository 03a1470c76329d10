package catalog

import (
	"unicode"
	"unicode/utf8"
)

// Name limits, from BigQuery's "Creating datasets" and "Creating tables"
// pages.
const (
	// MaxDatasetIDLen is the longest dataset id, in characters.
	MaxDatasetIDLen = 1024
	// MaxTableIDLen is the longest table id, in UTF-8 bytes.
	MaxTableIDLen = 1024
	// MaxProjectIDLen is the longest project id (without a domain prefix).
	MaxProjectIDLen = 30
	// maxDomainLen bounds the "example.com" part of a domain-scoped
	// project id ("example.com:my-project").
	maxDomainLen = 253
)

// ValidateProjectID checks a project id. Google Cloud project ids are 6 to
// 30 lowercase letters, digits and hyphens, start with a letter and do not
// end with a hyphen; a legacy domain-scoped id has a "domain:" prefix.
// bqstore is a local server where short ids such as "p" or "local" are
// customary, so it accepts 1 to 30 characters: the only deliberate
// difference from BigQuery's rule.
func ValidateProjectID(id string) error {
	name := id
	for i := len(id) - 1; i >= 0; i-- {
		if id[i] == ':' {
			if err := validateDomain(id[:i]); err != nil {
				return invalidf("Invalid project ID '%s'. %s", printable(id), err.Error())
			}
			name = id[i+1:]
			break
		}
	}
	if name == "" || len(name) > MaxProjectIDLen {
		return invalidf("Invalid project ID '%s'. Project IDs must contain 1-%d characters.", printable(id), MaxProjectIDLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := ('a' <= c && c <= 'z') || (i > 0 && (('0' <= c && c <= '9') || c == '-'))
		if !ok {
			return invalidf("Invalid project ID '%s'. Project IDs must contain lowercase letters, digits or dashes, and start with a letter.", printable(id))
		}
	}
	if name[len(name)-1] == '-' {
		return invalidf("Invalid project ID '%s'. Project IDs cannot end with a dash.", printable(id))
	}
	return nil
}

type domainError string

func (e domainError) Error() string { return string(e) }

func validateDomain(d string) error {
	if d == "" || len(d) > maxDomainLen {
		return domainError("The domain prefix must contain 1-253 characters.")
	}
	for i := 0; i < len(d); i++ {
		c := d[i]
		if !(('a' <= c && c <= 'z') || ('0' <= c && c <= '9') || c == '-' || c == '.') {
			return domainError("The domain prefix may contain only lowercase letters, digits, dots and dashes.")
		}
	}
	return nil
}

// ValidateDatasetID checks a dataset id: 1 to 1024 letters (a-z, A-Z),
// digits and underscores. Dataset ids are case-sensitive.
func ValidateDatasetID(id string) error {
	if id == "" || len(id) > MaxDatasetIDLen {
		return invalidf("Invalid dataset ID \"%s\". Dataset IDs must be alphanumeric (plus underscores) and must be at most %d characters long.", printable(id), MaxDatasetIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') || c == '_') {
			return invalidf("Invalid dataset ID \"%s\". Dataset IDs must be alphanumeric (plus underscores) and must be at most %d characters long.", printable(id), MaxDatasetIDLen)
		}
	}
	return nil
}

// ValidateTableID checks a table id: 1 to 1024 UTF-8 bytes of characters in
// the Unicode categories L (letter), M (mark), N (number), Pc (connector,
// including underscore), Pd (dash) and Zs (space). Partition decorators
// ("t$20240101") and wildcards are not table ids.
func ValidateTableID(id string) error {
	if id == "" || len(id) > MaxTableIDLen {
		return invalidf("Invalid table ID \"%s\". Table IDs must be 1-%d UTF-8 bytes long.", printable(id), MaxTableIDLen)
	}
	if !utf8.ValidString(id) {
		return invalidf("Invalid table ID \"%s\". Table IDs must be valid UTF-8.", printable(id))
	}
	for _, r := range id {
		if !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.Pc, unicode.Pd, unicode.Zs) {
			return invalidf("Invalid table ID \"%s\". Table IDs must be alphanumeric (plus underscores, dashes, spaces, and Unicode letters, marks and numbers).", printable(id))
		}
	}
	return nil
}

// printable shortens and escapes a name for an error message, so that a
// megabyte of NULs does not become a megabyte of error text.
func printable(s string) string {
	const max = 128
	out := make([]rune, 0, min(len(s), max))
	n := 0
	for _, r := range s {
		if n == max {
			return string(out) + "..."
		}
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			r = '\uFFFD'
		}
		out = append(out, r)
		n++
	}
	return string(out)
}
