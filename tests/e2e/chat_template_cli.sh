#!/usr/bin/env bash
# `gemmaserve chat-template` prints exactly what transformers' jinja2 environment renders
# (tools/chat/render_reference.py), for template files and for a model directory, and fails
# cleanly where jinja2 raises. Usage: chat_template_cli.sh GEMMASERVE SOURCE_DIR
set -euo pipefail
bin="$1"; src="$2"
ref="/usr/bin/python3 $src/tools/chat/render_reference.py"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
templates=()
for t in "$src"/.cache/testdata/gemma4/templates/google-gemma-4-31B-it*.jinja; do
  [ -f "$t" ] && templates+=("$t")
done
# The demo template, as `make-model --preset demo` would ship it, comes from the binary's own
# source: render it through a model directory below. Template files first:
checked=0
for t in "${templates[@]}"; do
  for c in "$src"/tests/chat/conversations/{simple_user,multi_turn,tools_nested_schema,tool_call_object_args,content_parts_image,unicode_special,empty_messages_raises}.json; do
    if $ref --template "$t" --conversation "$c" >"$work/ref.txt" 2>"$work/ref.err"; then
      "$bin" chat-template --template "$t" --messages "$c" >"$work/out.txt"
      cmp "$work/ref.txt" "$work/out.txt" || { echo "mismatch: $t $c"; diff "$work/ref.txt" "$work/out.txt" | head; exit 1; }
    else
      if "$bin" chat-template --template "$t" --messages "$c" >"$work/out.txt" 2>"$work/err.txt"; then
        echo "jinja2 raised but gemmaserve rendered: $t $c"; exit 1
      fi
      grep -q "^error: .*template error (line" "$work/err.txt" || { echo "unclear error:"; cat "$work/err.txt"; exit 1; }
    fi
    checked=$((checked + 1))
  done
done

# A model directory: template in tokenizer_config.json, special tokens as AddedToken objects,
# messages as a bare array plus the --tools / --add-generation-prompt / --enable-thinking flags.
mkdir -p "$work/model"
tmpl='{{ bos_token }}{% if enable_thinking %}[think]{% endif %}{% for m in messages %}<{{ m.role }}>{{ m.content }}{{ eos_token }}{% endfor %}{% if tools %}{{ tools | tojson }}{% endif %}{% if add_generation_prompt %}<model>{% endif %}'
/usr/bin/python3 - "$work/model/tokenizer_config.json" "$tmpl" <<'PY'
import json, sys
json.dump({"bos_token": {"content": "<s>", "__type": "AddedToken"}, "eos_token": "</s>", "chat_template": sys.argv[2]},
          open(sys.argv[1], "w"))
PY
echo '[{"role": "user", "content": "Hé \"you\""}]' >"$work/msgs.json"
echo '[{"type": "function", "function": {"name": "f", "parameters": {"z": 1, "a": 2}}}]' >"$work/tools.json"
"$bin" chat-template --model "$work/model" --messages "$work/msgs.json" --tools "$work/tools.json" \
  --add-generation-prompt --enable-thinking >"$work/out.txt"
printf '%s' '<s>[think]<user>Hé "you"</s>[{"type": "function", "function": {"name": "f", "parameters": {"z": 1, "a": 2}}}]<model>' >"$work/want.txt"
cmp "$work/want.txt" "$work/out.txt" || { echo "model dir mismatch"; cat "$work/out.txt"; exit 1; }
echo "chat-template CLI: $checked template renders and the model directory match"
