package catalog

import (
	"slices"
	"strings"
)

// sortDocument orders the document's entries so that the file is
// deterministic for a given catalog.
func sortDocument(doc *document) {
	slices.SortFunc(doc.Projects, func(a, b *Project) int { return strings.Compare(a.ID, b.ID) })
	slices.SortFunc(doc.Datasets, func(a, b *Dataset) int {
		return strings.Compare(a.ProjectID+"\x00"+a.DatasetID, b.ProjectID+"\x00"+b.DatasetID)
	})
	slices.SortFunc(doc.Tables, func(a, b *Table) int {
		return strings.Compare(a.ProjectID+"\x00"+a.DatasetID+"\x00"+a.TableID, b.ProjectID+"\x00"+b.DatasetID+"\x00"+b.TableID)
	})
	slices.Sort(doc.DroppedTables)
}
