"""Ctrl-C (SIGINT) interrupts a blocking call cleanly: KeyboardInterrupt in Python, in bounded time."""

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there afterwards
    return port


def run_and_interrupt(script, tmp_path, after=1.5, limit=20):
    f = tmp_path / "s.py"
    f.write_text(textwrap.dedent(script))
    # SIGINT back to its default in the child: a shell starts background jobs (`cmd &`, nohup) with SIGINT
    # ignored, Python then installs no KeyboardInterrupt handler, and the test would see an ignored Ctrl-C.
    p = subprocess.Popen([sys.executable, str(f)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert p.stdout.readline().strip() == "started"
        time.sleep(after)
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=limit)
        return p.returncode, out, err, time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_ctrl_c_stops_a_wait_for_the_data_service(tmp_path):
    f = tmp_path / "x.libsvm"
    f.write_text("1 0:1\n")
    rc, out, err, seconds = run_and_interrupt(f"""
        import ctrain
        p = ctrain.DataService("127.0.0.1:{free_port()}").pipeline({str(f)!r}, field_size=1)
        print("started", flush=True)
        try:
            list(p)
        except KeyboardInterrupt:
            print("KeyboardInterrupt", flush=True)
    """, tmp_path)
    assert rc == 0, err
    assert out.strip() == "KeyboardInterrupt", err
    assert seconds < 5


def test_ctrl_c_stops_iteration_over_a_fifo_without_writer(tmp_path):
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    # The reader waits for a writer up to pipe_timeout_ms; Ctrl-C raises at once, and the
    # interrupted read ends by that timeout when the iterator is closed.
    rc, out, err, seconds = run_and_interrupt(f"""
        import time, ctrain
        it = iter(ctrain.Pipeline({str(fifo)!r}, format="libsvm", field_size=1, pipe_timeout_ms=4000))
        print("started", flush=True)
        t = time.monotonic()
        try:
            next(it)
        except KeyboardInterrupt:
            print("KeyboardInterrupt after %.1f s" % (time.monotonic() - t), flush=True)
    """, tmp_path, after=1.0)
    assert rc == 0, err
    assert out.startswith("KeyboardInterrupt after"), (out, err)
    assert float(out.split()[2]) < 3.0


def test_ctrl_c_stops_fit_with_a_checkpoint(shared_data, tmp_path):
    model_dir = tmp_path / "m"
    rc, out, err, seconds = run_and_interrupt(f"""
        import ctrain
        t = ctrain.Trainer(model_dir={str(model_dir)!r}, feature_size=921, id_base=1, embedding_size=8,
                           deep_layers="32", batch_size=64, epochs=1000, progress="none",
                           intra_op_parallelism_threads=1)
        print("started", flush=True)
        try:
            t.fit({str(shared_data / "criteo_deepfm_va10k.libsvm")!r})
        except KeyboardInterrupt:
            print("KeyboardInterrupt", flush=True)
        logs = ctrain.Trainer(model_dir={str(model_dir)!r}, feature_size=921, id_base=1, embedding_size=8,
                              deep_layers="32", batch_size=64, epochs=1000, max_steps=1, progress="none").fit(
            {str(shared_data / "criteo_deepfm_va10k.libsvm")!r})
        print("resumed at step", logs["steps"], logs["restored"], flush=True)
    """, tmp_path, after=3.0, limit=60)
    assert rc == 0, err
    lines = out.strip().splitlines()
    assert lines[0] == "KeyboardInterrupt", (out, err)
    # The run stopped at some step > 1 and wrote its checkpoint: the next fit restored it
    # (max_steps=1 is already reached, so it runs no step).
    assert lines[1].startswith("resumed at step") and lines[1].endswith("True"), (out, err)
    assert int(lines[1].split()[3]) > 1
