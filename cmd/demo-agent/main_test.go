package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/a2a-gateway/a2a-gateway/internal/pb/a2a10"
)

func TestRunRejectsBadFlags(t *testing.T) {
	cases := [][]string{
		{"-step-delay", "0s"},
		{"-step-delay", "-1s"},
		{"-addr"},
		{"stray-argument"},
		{"-no-such-flag"},
		{"-grpc", "not-an-address"},
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			if err := run(args, io.Discard); err == nil {
				t.Fatal("run accepted bad arguments")
			}
		})
	}
}

// TestRunServesAndShutsDown starts the command on a free port, reads the
// card it serves and stops it with SIGTERM.
func TestRunServesAndShutsDown(t *testing.T) {
	logR, logW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run([]string{"-addr", "127.0.0.1:0", "-grpc", "127.0.0.1:0", "-push=false", "-step-delay", "5ms", "-name", "Cmd Agent"}, logW)
		logW.Close()
	}()

	lines := bufio.NewScanner(logR)
	addr, grpcAddr := "", ""
	for addr == "" && lines.Scan() {
		line := lines.Text()
		if !strings.Contains(line, "demo agent listening") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "addr="); ok {
				addr = v
			}
			if v, ok := strings.CutPrefix(f, "grpc="); ok {
				grpcAddr = v
			}
		}
	}
	if addr == "" {
		t.Fatalf("no listening line in the log (run: %v)", lines.Err())
	}
	go func() { _, _ = io.Copy(io.Discard, logR) }()

	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Get("http://" + addr + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	var card struct {
		Name         string `json:"name"`
		URL          string `json:"url"`
		Capabilities struct {
			PushNotifications bool `json:"pushNotifications"`
		} `json:"capabilities"`
	}
	err = json.NewDecoder(resp.Body).Decode(&card)
	resp.Body.Close()
	if err != nil || card.Name != "Cmd Agent" || card.URL != "http://"+addr || card.Capabilities.PushNotifications {
		t.Fatalf("card %+v, %v", card, err)
	}

	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := pb.NewA2AServiceClient(conn).SendMessage(ctx, &pb.SendMessageRequest{Message: &pb.Message{
		MessageId: "m-1", Role: pb.Role_ROLE_USER, Parts: []*pb.Part{{Content: &pb.Part_Text{Text: "hello"}}},
	}})
	if err != nil || res.GetTask().GetStatus().GetState() != pb.TaskState_TASK_STATE_COMPLETED {
		t.Fatalf("gRPC send on %q: %v %v", grpcAddr, res, err)
	}

	// run has installed its signal handler before logging, so this signal
	// reaches it rather than the test process.
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not stop on SIGTERM")
	}
}
