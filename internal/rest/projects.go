package rest

import (
	"net/http"
	"slices"

	"github.com/bqstore/bqstore/internal/catalog"
)

// projects.list: GET /projects.
//
// bqstore has no resource manager: a project exists once it is named. The
// list is every project the catalog knows: the server's default project
// (serve --project, "local" unless set), which exists from the start, and
// every project a dataset was ever created in (deleting its datasets does
// not forget it). That is what `bq ls -p` shows. With --auth-tokens a
// caller sees only the projects its token may use (Options.ProjectVisible). Projects have no display
// name or number here, so friendlyName and numericId are left out.

type projectRef struct {
	ProjectID string `json:"projectId"`
}

type projectListItem struct {
	Kind             string     `json:"kind"`
	ID               string     `json:"id"`
	ProjectReference projectRef `json:"projectReference"`
}

type projectList struct {
	Kind          string            `json:"kind"`
	Projects      []projectListItem `json:"projects,omitempty"`
	NextPageToken string            `json:"nextPageToken,omitempty"`
	TotalItems    int               `json:"totalItems"`
}

// listProjects serves projects.list.
func (h *Handler) listProjects(w http.ResponseWriter, r *http.Request) {
	all := h.cat.Projects()
	if visible := h.opts.ProjectVisible; visible != nil {
		all = slices.DeleteFunc(all, func(p catalog.Project) bool { return !visible(r, p.ID) })
	}
	start, end, next, err := page(r, len(all), func(i int) string { return all[i].ID })
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	out := projectList{Kind: "bigquery#projectList", NextPageToken: next, TotalItems: len(all)}
	for _, p := range all[start:end] {
		out.Projects = append(out.Projects, projectListItem{
			Kind: "bigquery#project", ID: p.ID, ProjectReference: projectRef{ProjectID: p.ID},
		})
	}
	writeJSON(w, http.StatusOK, &out)
}
