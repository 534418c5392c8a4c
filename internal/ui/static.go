package ui

import (
	"embed"
	"io/fs"
	"net/http"
)

// staticFiles is the web UI: hand-written HTML, CSS and JavaScript that
// read the REST API under /api/v1 from the browser. Nothing is built:
// the files are served as they are in the repository.
//
//go:embed static
var staticFiles embed.FS

// staticHandler serves the web UI's pages at /: index.html (the
// cluster), topology.html?id=ID and component.html?id=C&topology_id=ID,
// Storm's UI paths, so that Storm's links (a visualization's :link)
// open Gale's pages.
func staticHandler() http.Handler {
	sub, err := fs.Sub(staticFiles, "static")
	if err != nil {
		panic(err) // the directory is embedded: it is there
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "the web UI's pages answer GET only; the actions are POSTs under /api/v1", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		// Pages served with the binary: a new binary's must show at once.
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
		files.ServeHTTP(w, r)
	})
}
