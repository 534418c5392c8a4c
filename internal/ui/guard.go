package ui

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"os"
	"strings"
)

// The guard keeps other web sites out of the UI. A page the user visits
// elsewhere can make the browser send requests to the UI (a form that
// POSTs to 127.0.0.1:8080, say) and, where nimbus needs no token (gale
// demo, gale dev), change the cluster; and a site whose name it points
// at 127.0.0.1 (DNS rebinding) reads the UI as its own origin. So:
//
//   - A mutation (any method but GET, HEAD and OPTIONS) that a browser
//     marks as sent from another origin (Sec-Fetch-Site, or an Origin
//     that is not the UI's own) is refused with 403.
//   - A mutation's body must be JSON: a Content-Type other than
//     application/json (a form's urlencoded, multipart or text/plain, the
//     types a page may send across origins without asking) is refused
//     with 415. Storm's REST clients send application/json, or no body
//     and no type (curl -X POST), which stays allowed, as does any client
//     that sends no Origin.
//   - A request that reached the UI on a loopback address must name a
//     loopback host (localhost, 127.0.0.1, [::1]) or this machine's name
//     in its Host header, else it is refused with 403: a rebound name
//     reaches 127.0.0.1 but names another host.
//
// The UI's own pages pass: they are same-origin, and send JSON.

// crossOrigin checks a request's Sec-Fetch-Site and Origin headers.
var crossOrigin = http.NewCrossOriginProtection()

// guard answers a request the rules above refuse and returns false;
// true lets it through.
func guard(w http.ResponseWriter, r *http.Request) bool {
	if reachedOnLoopback(r) && !loopbackHost(r.Host) {
		writeError(w, http.StatusForbidden, fmt.Sprintf("the UI was reached on a loopback address but the request names host %q: open it as http://127.0.0.1 or http://localhost with its port (a host name that resolves to 127.0.0.1 from elsewhere is refused, against DNS rebinding)", r.Host))
		return false
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	if err := crossOrigin.Check(r); err != nil {
		writeError(w, http.StatusForbidden, fmt.Sprintf("%s %s comes from another web site (Origin %q): the UI takes actions only from its own pages, or from clients that send no Origin (curl)", r.Method, r.URL.Path, r.Header.Get("Origin")))
		return false
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			writeError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("%s %s has Content-Type %q: send application/json (or no body)", r.Method, r.URL.Path, ct))
			return false
		}
	}
	return true
}

// reachedOnLoopback reports whether the connection of r came in on a
// loopback address.
func reachedOnLoopback(r *http.Request) bool {
	addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackHost reports whether the Host header hostPort names this
// machine: a loopback address, localhost (or a name under .localhost),
// or the machine's own name; or is empty (HTTP/1.0), which no browser
// sends.
func loopbackHost(hostPort string) bool {
	if hostPort == "" {
		return true
	}
	host := hostPort
	if h, _, err := net.SplitHostPort(hostPort); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback()
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	name, err := os.Hostname()
	return err == nil && name != "" && strings.EqualFold(host, name)
}
