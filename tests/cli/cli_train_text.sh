#!/usr/bin/env bash
# `dptrain train --model gpt-mini --text DIR` and `dptrain generate`: a short run on the fortunes corpus
# reports the token model's metrics (nats per token, bits per byte, tokens/s), repeats bit for bit, resumes
# from its checkpoint bit for bit, and a checkpoint generates text deterministically per seed; bad text
# input is refused with one line.
# shellcheck source=tests/cli/common.sh
source "$(dirname "$0")/common.sh" "$@"

TEXT=${DPTRAIN_TEXT_DIR:-/usr/share/games/fortunes}
if [ ! -d "$TEXT" ]; then
  echo "skipped: no text corpus in $TEXT (Debian's fortunes)"
  exit 77
fi

SHORT=(--model gpt-mini --text "$TEXT" --train-limit 48 --test-limit 16 --devices cpu:2 --json)

run_cli one train "${SHORT[@]}" --epochs 1 --checkpoint "$WORK/one.ckpt"
[ "$RC" -eq 0 ] || fail "gpt-mini exited with $RC: $(tail -n 3 "$WORK/one.err")"
json_check "$WORK/one.out" "d['model'] == 'gpt-mini' and d['parameters'] == 3323392 and d['tokens_per_sample'] == 128" \
  "the report names gpt-mini, its 3323392 parameters and 128-byte windows"
json_check "$WORK/one.out" "d['train_samples'] == 48 and d['test_samples'] == 16 and d['text'] == '$TEXT'" \
  "48 training and 16 validation windows of the corpus"
json_check "$WORK/one.out" "d['optimizer'] == 'adamw' and d['beta2'] == 0.95 and d['decay_scope'] == 'matrices' and d['clip'] == 1 and d['schedule'] == 'cosine' and d['batch'] == 16 and d['warmup'] == 0" \
  "gpt-mini's recipe: adamw, beta2 0.95, decay on matrices, clip 1, cosine, batch 16 (3 steps: no warm-up)"
json_check "$WORK/one.out" "abs(d['test_bits_per_byte'] - d['test_loss'] / 0.6931471805599453) < 1e-6 and abs(d['tokens_per_second'] - 128 * d['images_per_second']) < 1e-3 * d['tokens_per_second']" \
  "bits per byte = nats / ln 2, tokens/s = 128 windows/s"
# From ln(256) = 5.545 at the start, three steps of AdamW at lr 1e-3 bring the loss down.
json_check "$WORK/one.out" "0 < d['test_loss'] < 5.545 and 0 < d['train_loss'] < 5.6" "losses below ln 256"
grep -q "val loss .* nats/token, .* bits/byte" "$WORK/one.err" && pass "the summary reports nats/token and bits/byte" ||
  fail "no val loss line in: $(tail -n 8 "$WORK/one.err")"
grep -q "tok/s" "$WORK/one.err" && pass "progress in tok/s" || fail "no tok/s in the progress lines"

run_cli again train "${SHORT[@]}" --epochs 1
A=$(json_get "$WORK/one.out" "d['param_checksum']")
B=$(json_get "$WORK/again.out" "d['param_checksum']")
[ -n "$A" ] && [ "$A" = "$B" ] && pass "same seed, same bits: $A" || fail "two runs differ: $A vs $B"

# gpt-mini written out as JSON (int32 input) trains as the built-in one, bit for bit.
run_cli export model gpt-mini
cp "$WORK/export.out" "$WORK/gpt-mini.json"
json_check "$WORK/gpt-mini.json" "d['input'] == [128] and d['input_dtype'] == 'int32' and d['nodes'][0]['op'] == 'token_embedding'" \
  "dptrain model gpt-mini: an int32 input of 128 tokens, then token_embedding"
run_cli from_json train --model "$WORK/gpt-mini.json" --text "$TEXT" --train-limit 48 --test-limit 16 --devices cpu:2 \
  --json --optimizer adamw --beta2 0.95 --weight-decay 0.1 --decay-scope matrices --clip 1 --schedule cosine \
  --min-lr 1e-4 --init-std 0.02 --batch 16 --epochs 1 --warmup 0
A=$(json_get "$WORK/one.out" "d['param_checksum']")
B=$(json_get "$WORK/from_json.out" "d['param_checksum']")
[ -n "$B" ] && [ "$A" = "$B" ] && pass "gpt-mini.json trains as gpt-mini (its recipe given by hand): $B" ||
  fail "gpt-mini.json differs: $A vs $B ($(tail -n 2 "$WORK/from_json.err"))"

# `dptrain model gpt-mini --tie ...` writes the tie into the file, which trains as the untied file with --tie.
run_cli export_tied model gpt-mini --tie lm_head.weight=transformer.wte.weight
cp "$WORK/export_tied.out" "$WORK/gpt-mini-tied.json"
json_check "$WORK/gpt-mini-tied.json" \
  "d['ties'] == [{'parameter': 'lm_head.weight', 'source': 'transformer.wte.weight'}]" \
  "dptrain model gpt-mini --tie: the file lists the tie"
TIED_RUN=(--text "$TEXT" --train-limit 32 --test-limit 16 --devices cpu:2 --batch 16 --epochs 1 --json)
run_cli tied_file train --model "$WORK/gpt-mini-tied.json" "${TIED_RUN[@]}"
run_cli tied_flag train --model "$WORK/gpt-mini.json" --tie lm_head.weight=transformer.wte.weight "${TIED_RUN[@]}"
A=$(json_get "$WORK/tied_flag.out" "d['param_checksum']")
[ -n "$A" ] && [ "$A" = "$(json_get "$WORK/tied_file.out" "d['param_checksum']")" ] &&
  pass "the tied file trains as --tie: $A" || fail "the tied file differs from --tie ($(tail -n 2 "$WORK/tied_file.err"))"
run_cli bad_tie model gpt-mini --tie
[ "$RC" -eq 2 ] && pass "dptrain model --tie without a value: usage error" || fail "model --tie without a value: $RC"

# Two epochs straight, and one epoch resumed from the first's checkpoint: the same bits (a constant
# learning rate: the cosine schedule spans the planned run, which the two runs plan differently).
run_cli first train "${SHORT[@]}" --epochs 1 --schedule constant --checkpoint "$WORK/first.ckpt"
run_cli two train "${SHORT[@]}" --epochs 2 --schedule constant
run_cli resumed train "${SHORT[@]}" --epochs 2 --schedule constant --resume "$WORK/first.ckpt"
A=$(json_get "$WORK/two.out" "d['param_checksum']")
B=$(json_get "$WORK/resumed.out" "d['param_checksum']")
[ -n "$A" ] && [ "$A" = "$B" ] && pass "a resumed run equals a straight one: $A" || fail "resume differs: $A vs $B"

# Generation: the prompt, then exactly N bytes; the same seed gives the same text, greedy ignores it.
run_cli gen1 generate --checkpoint "$WORK/one.ckpt" --prompt "Q: What" --tokens 40 --seed 1 --temperature 1
run_cli gen2 generate --checkpoint "$WORK/one.ckpt" --prompt "Q: What" --tokens 40 --seed 1 --temperature 1
run_cli gen3 generate --checkpoint "$WORK/one.ckpt" --prompt "Q: What" --tokens 40 --seed 2 --temperature 1
[ "$RC" -eq 0 ] || fail "generate exited with $RC: $(cat "$WORK/gen3.err")"
[ "$(head -c 7 "$WORK/gen1.out")" = "Q: What" ] && pass "generate prints the prompt first" || fail "no prompt: $(head -c 60 "$WORK/gen1.out")"
[ "$(wc -c <"$WORK/gen1.out")" -eq $((7 + 40 + 1)) ] && pass "the prompt, 40 bytes and a newline" ||
  fail "generated $(wc -c <"$WORK/gen1.out") bytes"
cmp -s "$WORK/gen1.out" "$WORK/gen2.out" && pass "same seed, same text" || fail "seed 1 twice differs"
cmp -s "$WORK/gen1.out" "$WORK/gen3.out" && fail "seeds 1 and 2 gave the same text" || pass "another seed, other text"
run_cli greedy1 generate --checkpoint "$WORK/one.ckpt" --prompt "Q: What" --tokens 20 --temperature 0 --seed 1
run_cli greedy2 generate --checkpoint "$WORK/one.ckpt" --prompt "Q: What" --tokens 20 --temperature 0 --seed 9
cmp -s "$WORK/greedy1.out" "$WORK/greedy2.out" && pass "temperature 0 ignores the seed" || fail "greedy differs by seed"

# The LM head tied to the token embedding (--tie): 65536 parameters fewer, the tie in the model's JSON;
# the tied model written out and read back trains to the same bits; generate needs the same tie.
TIE=lm_head.weight=transformer.wte.weight
run_cli tied train "${SHORT[@]}" --epochs 1 --tie "$TIE" --checkpoint "$WORK/tied.ckpt"
[ "$RC" -eq 0 ] || fail "--tie exited with $RC: $(tail -n 3 "$WORK/tied.err")"
json_check "$WORK/tied.out" "d['parameters'] == 3323392 - 65536 and 0 < d['test_loss'] < 5.545" \
  "--tie: 3257856 parameters (the head reads wte), and it learns"
python3 - "$WORK/gpt-mini.json" "$WORK/tied.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["ties"] = [{"parameter": "lm_head.weight", "source": "transformer.wte.weight"}]
json.dump(d, open(sys.argv[2], "w"))
PY
run_cli tied_json train --model "$WORK/tied.json" --text "$TEXT" --train-limit 48 --test-limit 16 --devices cpu:2 \
  --json --optimizer adamw --beta2 0.95 --weight-decay 0.1 --decay-scope matrices --clip 1 --schedule cosine \
  --min-lr 1e-4 --init-std 0.02 --batch 16 --epochs 1 --warmup 0
A=$(json_get "$WORK/tied.out" "d['param_checksum']")
B=$(json_get "$WORK/tied_json.out" "d['param_checksum']")
[ -n "$A" ] && [ "$A" = "$B" ] && pass "a JSON file with \"ties\" trains as --tie: $A" || fail "tied JSON differs: $A vs $B"
run_cli tied_gen generate --checkpoint "$WORK/tied.ckpt" --tie "$TIE" --prompt "Q: What" --tokens 10 --seed 1
[ "$RC" -eq 0 ] && [ "$(wc -c <"$WORK/tied_gen.out")" -eq $((7 + 10 + 1)) ] && pass "generate --tie from a tied checkpoint" ||
  fail "generate --tie: $RC $(cat "$WORK/tied_gen.err")"
run_cli untied_gen generate --checkpoint "$WORK/tied.ckpt" --prompt "Q: What" --tokens 10
[ "$RC" -ne 0 ] && grep -q "tie:lm_head.weight=transformer.wte.weight" "$WORK/untied_gen.err" &&
  pass "a tied checkpoint without --tie: refused, naming the tie" || fail "untied generate: $RC $(cat "$WORK/untied_gen.err")"
run_cli bad_tie train --model gpt-mini --tie lm_head.weight=transformer.wpe.weight --devices cpu:1
[ "$RC" -eq 2 ] && grep -q "the shapes differ" "$WORK/bad_tie.err" && [ "$(wc -l <"$WORK/bad_tie.err")" -eq 1 ] &&
  pass "--tie of different shapes: usage error, one line" || fail "bad --tie: $RC $(cat "$WORK/bad_tie.err")"
run_cli bad_tie2 train --model gpt-mini --tie lm_head.weight --devices cpu:1
[ "$RC" -eq 2 ] && grep -q "expected PARAM=SOURCE" "$WORK/bad_tie2.err" && pass "--tie without '=': usage error" ||
  fail "--tie without '=': $RC $(cat "$WORK/bad_tie2.err")"

# Bad input: one line, the right exit status, nothing trained.
printf 'ok\xff\xfe' >"$WORK/binary.txt"
run_cli binary train --model gpt-mini --text "$WORK/binary.txt" --devices cpu:1
[ "$RC" -eq 1 ] && grep -q "not UTF-8 text" "$WORK/binary.err" && [ "$(wc -l <"$WORK/binary.err")" -eq 1 ] &&
  pass "a binary --text file: exit 1, one line" || fail "binary text: $RC $(cat "$WORK/binary.err")"
printf 'short' >"$WORK/short.txt"
run_cli short train --model gpt-mini --text "$WORK/short.txt" --devices cpu:1
[ "$RC" -eq 1 ] && grep -q "needs at least 129 bytes" "$WORK/short.err" && pass "a text shorter than the context: exit 1" ||
  fail "short text: $RC $(cat "$WORK/short.err")"
run_cli missing train --model gpt-mini --text "$WORK/nothing-here" --devices cpu:1
[ "$RC" -eq 1 ] && [ "$(wc -l <"$WORK/missing.err")" -eq 1 ] && pass "a missing --text path: exit 1, one line" ||
  fail "missing text: $RC $(cat "$WORK/missing.err")"
run_cli lenet_text train --model lenet --text "$TEXT"
[ "$RC" -eq 2 ] && grep -q "reads images, not tokens" "$WORK/lenet_text.err" && pass "--text with an image model: usage error" ||
  fail "lenet --text: $RC $(cat "$WORK/lenet_text.err")"
run_cli gen_lenet generate --checkpoint "$WORK/one.ckpt" --model lenet
[ "$RC" -eq 2 ] && pass "generate with an image model: usage error" || fail "generate lenet: $RC"
run_cli gen_mismatch generate --checkpoint "$WORK/one.ckpt" --model resnet18
[ "$RC" -eq 2 ] && pass "generate with resnet18: usage error" || fail "generate resnet18: $RC"

finish
