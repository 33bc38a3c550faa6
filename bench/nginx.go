package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/template"
)

// nginxConf is a plain reverse proxy: keep-alive to the upstream, no
// access log, every file it writes inside the run's directory.
var nginxConf = template.Must(template.New("nginx.conf").Parse(`daemon off;
worker_processes auto;
pid {{.Dir}}/nginx.pid;
error_log {{.Dir}}/nginx-error.log warn;
events {
    worker_connections 8192;
}
http {
    access_log off;
    client_body_temp_path {{.Dir}}/nginx-body;
    proxy_temp_path {{.Dir}}/nginx-proxy;
    fastcgi_temp_path {{.Dir}}/nginx-fastcgi;
    uwsgi_temp_path {{.Dir}}/nginx-uwsgi;
    scgi_temp_path {{.Dir}}/nginx-scgi;
    upstream agent {
        server {{.Upstream}};
        keepalive {{.Keepalive}};
    }
    server {
        listen {{.Listen}};
        location / {
            proxy_pass http://agent;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
`))

// nginxBinary resolves the -nginx option: a path, "" for PATH look-up, or
// "off". It returns "" with a reason when nginx is not to be measured.
func nginxBinary(opt string) (bin, skip string) {
	switch opt {
	case "off":
		return "", "disabled with -nginx off"
	case "":
		p, err := exec.LookPath("nginx")
		if err != nil {
			return "", "nginx is not on PATH"
		}
		return p, ""
	}
	if _, err := os.Stat(opt); err != nil {
		return "", fmt.Sprintf("nginx binary %s: %v", opt, err)
	}
	return opt, ""
}

// nginxVersion is what `nginx -v` says, for the report.
func nginxVersion(bin string) string {
	out, err := exec.Command(bin, "-v").CombinedOutput()
	if err != nil {
		return ""
	}
	v := strings.TrimSpace(string(out))
	return strings.TrimPrefix(v, "nginx version: ")
}

// startNginx runs nginx in the foreground in front of upstreamHost.
func startNginx(ctx context.Context, ps *procSet, bin, dir, upstreamHost string, keepalive int) (string, *proc, error) {
	var url string
	p, err := startWithRetry(ctx, func(ctx context.Context) (*proc, error) {
		listen, err := freeAddr()
		if err != nil {
			return nil, err
		}
		confPath := filepath.Join(dir, "nginx.conf")
		f, err := os.Create(confPath)
		if err != nil {
			return nil, fmt.Errorf("nginx config: %w", err)
		}
		err = nginxConf.Execute(f, map[string]any{"Dir": dir, "Upstream": upstreamHost, "Listen": listen, "Keepalive": keepalive})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("nginx config: %w", err)
		}
		// -e keeps nginx from opening its default error log before it has
		// read the configuration.
		cmd := exec.Command(bin, "-p", dir, "-c", confPath, "-e", filepath.Join(dir, "nginx-error.log"))
		p, err := ps.start("nginx", cmd)
		if err != nil {
			return nil, err
		}
		if err := waitReady(ctx, p, startupWait, dialReady(listen)); err != nil {
			p.stop()
			return nil, err
		}
		url = "http://" + listen
		return p, nil
	})
	return url, p, err
}
