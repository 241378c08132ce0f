#!/usr/bin/env bash
# `dptrain train --save-weights / --load-weights`: the weights go out as safetensors and come back bit for
# bit. The file's float32 data hash to the run's param_checksum (FNV-1a over the parameters in the model's
# order); a run that starts from a file and takes steps of lr 1e-30 (too small to move any nonzero
# float32 value) writes the same file back and reports its checksum; a finished checkpoint given to
# --resume is written out without training.
# shellcheck source=tests/cli/common.sh
source "$(dirname "$0")/common.sh" "$@"

DATA=${DPTRAIN_DATA_DIR:-/usr/share/datasets/fashion-mnist}
if [ ! -f "$DATA/train-images-idx3-ubyte.gz" ]; then
  echo "skipped: Fashion-MNIST not found in $DATA"
  exit 77
fi

SHORT=(--model lenet --epochs 1 --train-limit 256 --test-limit 64 --batch 64 --json)

# safetensors_tool fnv FILE: FNV-1a 64 of lenet's parameters in the model's order (by node, the weight before
# the bias; the file sorts them by name); safetensors_tool nonzero IN OUT: IN with every
# exact 0.0 replaced by 0.001; safetensors_tool same A B: the same header and data.
safetensors_tool() {
  "$PYTHON" - "$@" <<'PY'
import json, struct, sys

def read(path):
    blob = open(path, "rb").read()
    n = struct.unpack("<Q", blob[:8])[0]
    return blob, json.loads(blob[8:8 + n]), 8 + n

op = sys.argv[1]
if op == "fnv":
    blob, header, base = read(sys.argv[2])
    names = sorted((k for k in header if k != "__metadata__"),
                   key=lambda k: (int(k.split(".")[0]), k.split(".")[1] != "weight"))
    h = 0xCBF29CE484222325
    for begin, end in (header[k]["data_offsets"] for k in names):
        for byte in blob[base + begin:base + end]:
            h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    print("%016x" % h)
elif op == "nonzero":
    blob, header, base = read(sys.argv[2])
    data = bytearray(blob)
    count = 0
    for k, v in header.items():
        if k == "__metadata__" or v["dtype"] != "F32":
            continue
        begin, end = v["data_offsets"]
        for at in range(base + begin, base + end, 4):
            if struct.unpack_from("<f", data, at)[0] == 0.0:
                struct.pack_into("<f", data, at, 0.001)
                count += 1
    open(sys.argv[3], "wb").write(bytes(data))
    print(count)
elif op == "same":
    sys.exit(0 if open(sys.argv[2], "rb").read() == open(sys.argv[3], "rb").read() else 1)
PY
}

# Out: the file holds the run's final parameters.
run_cli out train "${SHORT[@]}" --devices cpu:2 --save-weights "$WORK/a.safetensors"
[ "$RC" -eq 0 ] || fail "--save-weights exited with $RC: $(tail -n 3 "$WORK/out.err")"
WANT=$(json_get "$WORK/out.out" "d['param_checksum']")
GOT=$(safetensors_tool fnv "$WORK/a.safetensors")
if [ -n "$WANT" ] && [ "$WANT" = "$GOT" ]; then
  pass "--save-weights: the file's parameters hash to the run's param_checksum $WANT"
else
  fail "--save-weights: the file hashes to $GOT, the run reports $WANT"
fi

# In: a file without zeros (a step of lr 1e-30 moves a 0.0, not the others) comes back unchanged after a
# training epoch, on another device count.
ZEROS=$(safetensors_tool nonzero "$WORK/a.safetensors" "$WORK/b.safetensors")
WANT=$(safetensors_tool fnv "$WORK/b.safetensors")
run_cli in train "${SHORT[@]}" --devices cpu:1 --lr 1e-30 --load-weights "$WORK/b.safetensors" \
  --save-weights "$WORK/c.safetensors"
[ "$RC" -eq 0 ] || fail "--load-weights exited with $RC: $(tail -n 3 "$WORK/in.err")"
GOT=$(json_get "$WORK/in.out" "d['param_checksum']")
if [ -n "$WANT" ] && [ "$WANT" = "$GOT" ] && safetensors_tool same "$WORK/b.safetensors" "$WORK/c.safetensors"; then
  pass "--load-weights: the weights came back bit for bit ($ZEROS zeros replaced; param_checksum $GOT)"
else
  fail "--load-weights: param_checksum $GOT, the file's $WANT (or the written file differs)"
fi

# A finished run's checkpoint: nothing trained, the weights written.
run_cli ckpt train "${SHORT[@]}" --devices cpu:2 --checkpoint "$WORK/a.ckpt"
WANT=$(json_get "$WORK/ckpt.out" "d['param_checksum']")
run_cli export train "${SHORT[@]}" --devices cpu:2 --resume "$WORK/a.ckpt" --save-weights "$WORK/d.safetensors"
GOT=$(safetensors_tool fnv "$WORK/d.safetensors" 2>/dev/null)
if [ "$RC" -eq 0 ] && [ -n "$WANT" ] && [ "$WANT" = "$GOT" ] && grep -q "nothing to train" "$WORK/export.err"; then
  pass "--resume of a finished run --save-weights: nothing trained, param_checksum $GOT written"
else
  fail "--resume --save-weights: exit $RC, file $GOT, checkpoint $WANT: $(tail -n 2 "$WORK/export.err")"
fi

# A file that cannot be written: exit status 1 and the library's one-line message.
run_cli unwritable train "${SHORT[@]}" --devices cpu:1 --save-weights "$WORK/no-such-directory/w.safetensors"
if [ "$RC" -eq 1 ] && [ "$(grep -c '^dptrain: error: ' "$WORK/unwritable.err")" -eq 1 ] &&
  [ ! -s "$WORK/unwritable.out" ]; then
  pass "--save-weights into a missing directory: $(grep '^dptrain: error: ' "$WORK/unwritable.err")"
else
  fail "--save-weights into a missing directory: exit $RC: $(tail -n 2 "$WORK/unwritable.err")"
fi

finish
