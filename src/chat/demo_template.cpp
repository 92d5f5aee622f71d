#include "chat/demo_template.h"

namespace gs {

// Layout of a rendered prompt:
//   <bos>[<|turn>system\n[<|think|>\n][system text][<|tool>declaration:NAME{json}<tool|>...]<turn|>\n]
//   <|turn>user\n{text}<turn|>\n
//   <|turn>model\n[<|tool_call>call:NAME{key:json,...}<tool_call|>...]
//       [<|tool_response>response:NAME{value:json}<tool_response|>...]{text}<turn|>\n
// A model turn that made tool calls stays open until the model's next message, so the tool
// responses and the follow-up answer share the turn. Images, audio and video parts become
// <|image|>, <|audio|>, <|video|> placeholders.
const std::string& demo_chat_template() {
  static const std::string source = R"JINJA({#- gemmaserve demo chat template (Gemma-4 prompt format) -#}
{%- macro render_content(content) -%}
    {%- if content is string -%}
        {{- content | trim -}}
    {%- elif content is iterable and content is not mapping -%}
        {%- for part in content -%}
            {%- if part is mapping and part.get('type') == 'text' -%}
                {{- (part.get('text') or '') | trim -}}
            {%- elif part is mapping and part.get('type') in ['image', 'image_url', 'audio', 'input_audio', 'video'] -%}
                {{- {'image': '<|image|>', 'image_url': '<|image|>', 'audio': '<|audio|>', 'input_audio': '<|audio|>', 'video': '<|video|>'}[part.get('type')] -}}
            {%- endif -%}
        {%- endfor -%}
    {%- elif content is not none -%}
        {{- content | string | trim -}}
    {%- endif -%}
{%- endmacro -%}
{%- macro render_arguments(arguments) -%}
    {%- if arguments is mapping -%}
        {%- for key, value in arguments.items() -%}
            {{- key ~ ':' ~ (value | tojson) -}}{{- ',' if not loop.last -}}
        {%- endfor -%}
    {%- elif arguments is not none -%}
        {{- arguments | string -}}
    {%- endif -%}
{%- endmacro -%}
{{- bos_token -}}
{%- set system_first = messages | length > 0 and messages[0].get('role') in ['system', 'developer'] -%}
{%- if system_first or tools or enable_thinking -%}
    {{- '<|turn>system\n' -}}
    {%- if enable_thinking -%}{{- '<|think|>\n' -}}{%- endif -%}
    {%- if system_first -%}{{- render_content(messages[0].get('content')) -}}{%- endif -%}
    {%- for tool in tools or [] -%}
        {%- set fn = tool.get('function', tool) -%}
        {{- '<|tool>declaration:' ~ fn.get('name', 'unknown') ~ (fn | tojson) ~ '<tool|>' -}}
    {%- endfor -%}
    {{- '<turn|>\n' -}}
{%- endif -%}
{%- set state = namespace(open_model_turn=false, names={}) -%}
{%- for message in (messages[1:] if system_first else messages) -%}
    {%- set role = message.get('role') -%}
    {%- if role == 'tool' -%}
        {%- if not state.open_model_turn -%}
            {{- '<|turn>model\n' -}}
            {%- set state.open_model_turn = true -%}
        {%- endif -%}
        {%- set name = message.get('name') or state.names.get(message.get('tool_call_id'), 'unknown') -%}
        {%- set body = message.get('content') -%}
        {%- if body is string -%}{%- set body = body | trim -%}{%- endif -%}
        {{- '<|tool_response>response:' ~ name ~ '{value:' ~ (body | tojson) ~ '}<tool_response|>' -}}
    {%- elif role == 'assistant' -%}
        {%- if not state.open_model_turn -%}{{- '<|turn>model\n' -}}{%- endif -%}
        {%- set calls = message.get('tool_calls') or [] -%}
        {%- set ids = namespace(map={}) -%}
        {%- for call in calls -%}
            {%- set fn = call.get('function', {}) -%}
            {{- '<|tool_call>call:' ~ fn.get('name', 'unknown') ~ '{' ~ render_arguments(fn.get('arguments')) ~ '}<tool_call|>' -}}
            {%- set ids.map = dict(ids.map, **{(call.get('id') or ''): fn.get('name', 'unknown')}) -%}
        {%- endfor -%}
        {%- set state.names = ids.map -%}
        {{- render_content(message.get('content')) -}}
        {%- if calls -%}
            {%- set state.open_model_turn = true -%}
        {%- else -%}
            {{- '<turn|>\n' -}}
            {%- set state.open_model_turn = false -%}
        {%- endif -%}
    {%- else -%}
        {%- if state.open_model_turn -%}
            {{- '<turn|>\n' -}}
            {%- set state.open_model_turn = false -%}
        {%- endif -%}
        {{- '<|turn>' ~ role ~ '\n' ~ render_content(message.get('content')) ~ '<turn|>\n' -}}
    {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt and not state.open_model_turn -%}
    {{- '<|turn>model\n' -}}
{%- endif -%}
)JINJA";
  return source;
}

}  // namespace gs
