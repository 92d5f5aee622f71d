#!/usr/bin/python3
"""Writes tests/chat/jinja_cases.json: small templates with the output Python's jinja2 gives
them in transformers' chat-template environment (or the fact that it raises). The C++ unit test
test_chat replays every case against gemmaserve's interpreter. Rerun after editing CASES:
    /usr/bin/python3 tools/chat/make_jinja_cases.py
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from render_reference import ENV  # noqa: E402

MSGS = [{"role": "system", "content": "  Be brief.  "}, {"role": "user", "content": "Hi <b>"},
        {"role": "assistant", "content": "Hello!", "extra": None}]
NESTED = {"b": 1, "A": [1, 2.5, None, True], "a": {"z": "é\"\n", "y": []}}

CASES = [
    # ---- output, whitespace control, trim_blocks / lstrip_blocks ----
    ("data", "plain text", {}),
    ("print_str", "{{ 'a' }}{{ \"b\" }}", {}),
    ("trailing_newline", "x\n", {}),
    ("crlf", "{% if true %}\r\nA\rB{% endif %}\n\n", {}),
    ("trim_blocks", "{% if true %}\nA\n{% endif %}\nB", {}),
    ("lstrip_blocks", "a\n    {% if true %}\n    x\n    {% endif %}\nb", {}),
    ("lstrip_not_vars", "a\n    {{ 'x' }}\n", {}),
    ("minus_strip", "a  \n {%- if true -%}  \n b {%- endif %}", {}),
    ("plus_keeps", "  {%+ if true %}A{% endif +%}\nB", {}),
    ("var_minus", "a {{- 'x' -}} \n b", {}),
    ("comment", "a\n  {# c #}\nb{#- x -#}  c", {}),
    ("comment_minus_end", "a\n  {# c -#}  \n b", {}),
    ("raw", "x\n  {% raw %}\n  {{ y }}{% if %}\n  {% endraw %}\nz", {}),
    ("midline_block", "a {% if true %}b{% endif %} c", {}),
    ("tabs_lstrip", "\t\t{% if true %}x{% endif %}", {}),
    # ---- literals and printing like Python ----
    ("ints_floats", "{{ 1 }} {{ 1.5 }} {{ 1e3 }} {{ 1_000 }} {{ 0x1F }} {{ 0b11 }} {{ 0o17 }} {{ 2.0 }}", {}),
    ("float_repr", "{{ 1e16 }} {{ 1e15 }} {{ 0.0001 }} {{ 0.00001 }} {{ 0.1 + 0.2 }} {{ 1/3 }} {{ -0.0 }} {{ 1e300*1e10 }}", {}),
    ("consts", "{{ true }} {{ True }} {{ false }} {{ none }} {{ None }}", {}),
    ("list_repr", "{{ [1, 'a', None, True, {'k': 'v'}, (1,), 1.5, []] }}", {}),
    ("tuple_repr", "{{ (1, 2) }}|{{ (1,) }}|{{ () }}|{{ 1, 'a' }}", {}),
    ("str_repr_quotes", "{{ [\"it's\", 'a\"b', 'x\\'y\"z', '\\\\'] }}", {}),
    ("str_repr_escapes", "{{ ['\\n\\t\\r\\x01\\x7f', 'é ü 日本', '\\u2028\\xa0\\u200b'] }}", {}),
    ("escapes", "{{ 'a\\qb' }}|{{ '\\x41\\101\\u00e9\\U0001F600' }}|{{ 'tab\\there' }}|{{ 'é\\é' }}", {}),
    ("adjacent_strings", "{{ 'a' 'b' \"c\" }}", {}),
    ("dict_repr", "{{ d }}", {"d": NESTED}),
    ("dict_literal_order", "{{ {'b': 1, 'a': 2, 'b': 3} }}", {}),
    ("dict_numeric_keys", "{{ {1: 'a', True: 'b', 1.0: 'c', 2: 'd'} }}", {}),
    ("undefined_prints_empty", "[{{ nope }}][{{ d.nope }}][{{ d['x'] }}]", {"d": {}}),
    # ---- arithmetic ----
    ("arith", "{{ 1 + 2 }} {{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }}", {}),
    ("arith_float", "{{ 7 // 2.0 }} {{ -7.5 % 2 }} {{ 2 ** -1 }} {{ 10 / 5 }} {{ 1 + 1.0 }} {{ 3 * 1.5 }}", {}),
    ("pow_left_assoc", "{{ 2 ** 3 ** 2 }}", {}),
    ("bool_arith", "{{ True + 1 }} {{ True * 3 }}", {}),
    ("str_ops", "{{ 'ab' + 'cd' }} {{ 'ab' * 3 }} {{ 3 * 'x' }} {{ [1] * 2 }} {{ [1] + [2] }} {{ 'a' ~ 1 ~ none ~ [2] }}", {}),
    ("unary", "{{ -1 }} {{ -(1+2) }} {{ +3 }} {{ -1|abs }} {{ not true }} {{ not 0 }} {{ - 2 ** 2 }}", {}),
    ("precedence", "{{ 1 + 2 * 3 - 4 / 2 }} {{ (1 + 2) * 3 }} {{ 'a' ~ 1 + 2 }} {{ 2 * 3 ~ 4 }}", {}),
    ("div_zero", "{{ 1 / 0 }}", {}),
    ("mod_zero", "{{ 1 % 0 }}", {}),
    ("add_type_error", "{{ 1 + 'a' }}", {}),
    ("percent_format", "{{ '%s-%d-%.2f|%5s|%-4d|%x|%%' % ('a', 3, 2.5, 'r', 7, 255) }}", {}),
    # ---- comparisons and logic ----
    ("compare", "{{ 1 < 2 }} {{ 2 <= 2 }} {{ 3 > 4 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 == 1.0 }} {{ 1 != 2 }}", {}),
    ("compare_chain", "{{ 1 < 2 < 3 }} {{ 1 < 3 < 2 }} {{ 1 == 1 == 1.0 }}", {}),
    ("eq_types", "{{ [1] == (1,) }} {{ {'a': 1} == {'a': 1} }} {{ none == none }} {{ x == y }} {{ x == none }} {{ 'a' == 1 }}", {}),
    ("compare_type_error", "{{ 1 < 'a' }}", {}),
    ("in_ops", "{{ 'x' in 'axb' }} {{ 1 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'abc' }} {{ 3 not in [1] }} {{ 'a' in nope }}", {}),
    ("in_type_error", "{{ 1 in 'abc' }}", {}),
    ("and_or_values", "{{ 0 or 'x' }} {{ 'a' and 'b' }} {{ '' and 'b' }} {{ none or [] }} {{ 1 and 0 or 3 }}", {}),
    ("ternary", "{{ 'y' if true else 'n' }} {{ 'y' if false else 'n' }} [{{ 'y' if false }}] {{ 1 if 0 else 2 if 0 else 3 }}", {}),
    # ---- variables, attributes, items ----
    ("attr_item", "{{ m[0].role }} {{ m[1]['content'] }} {{ m[-1].content }} {{ m[5] }} {{ m|length }}", {"m": MSGS}),
    ("item_fallback_to_method", "{{ d['items'] is defined }} {{ d['items'] is mapping }} {% if d['items'] %}T{% endif %}", {"d": {}}),
    ("attr_prefers_method", "{{ d.items is mapping }} {{ d['items'] is mapping }}", {"d": {"items": {"a": 1}}}),
    ("none_item", "{{ n['x'] is defined }} {{ n.x is defined }}", {"n": None}),
    ("undefined_attr_raises", "{{ nope.x }}", {}),
    ("undefined_item_raises", "{{ nope['x'] }}", {}),
    ("missing_then_attr_raises", "{{ d.a.b }}", {"d": {}}),
    ("slices", "{{ 'hello'[1:3] }} {{ 'hello'[::-1] }} {{ [1,2,3,4][1:] }} {{ [1,2,3,4][:-1] }} {{ [1,2,3,4][::2] }} {{ 'héllo'[1] }} {{ (1,2,3)[1:] }} {{ 'abc'[5:] }}", {}),
    ("dot_index", "{{ m.0.role }}", {"m": MSGS}),
    ("str_index_out", "[{{ 'abc'[10] }}]", {}),
    # ---- if / for / set / loops ----
    ("if_elif_else", "{% for x in [0, 1, 2] %}{% if x == 0 %}zero{% elif x == 1 %}one{% else %}many{% endif %},{% endfor %}", {}),
    ("for_loop_vars", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}", {}),
    ("for_prev_next", "{% for x in [1,2,3] %}[{{ loop.previtem }}|{{ loop.nextitem }}]{% endfor %}", {}),
    ("for_else", "{% for x in [] %}x{% else %}empty{% endfor %}{% for x in [1] %}{{ x }}{% else %}empty{% endfor %}", {}),
    ("for_filter", "{% for x in range(10) if x is odd %}{{ x }}{{ loop.index }}/{{ loop.length }} {% else %}none{% endfor %}", {}),
    ("for_unpack", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for a, b in [[1, 2], (3, 4), 'xy'] %}{{ a }}{{ b }}{% endfor %}", {"d": {"b": 1, "a": 2}}),
    ("for_dict_keys", "{% for k in d %}{{ k }}{% endfor %}", {"d": {"b": 1, "a": 2}}),
    ("for_undefined", "{% for x in nope %}x{% else %}none{% endfor %}", {}),
    ("for_none_raises", "{% for x in n %}x{% endfor %}", {"n": None}),
    ("loop_controls", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}", {}),
    ("nested_loops", "{% for a in [1,2] %}{% for b in 'xy' %}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{{ loop.index }}|{% endfor %}", {}),
    ("loop_cycle_changed", "{% for x in [1,1,2,3,3] %}{{ loop.cycle('a','b','c') }}{% if loop.changed(x) %}!{% endif %}{% endfor %}", {}),
    ("loop_recursive", "{% for n in tree recursive %}<{{ n.name }}{% if n.children %}:{{ loop(n.children) }}{% endif %}@{{ loop.depth }}>{% endfor %}",
     {"tree": [{"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}, {"name": "d"}]}),
    ("set_scoping_loop", "{% set x = 0 %}{% for i in range(3) %}{{ x }}{% set x = x + 1 %}{{ x }};{% endfor %}{{ x }}", {}),
    ("set_in_if_leaks", "{% if true %}{% set y = 5 %}{% endif %}{{ y }}", {}),
    ("set_tuple", "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set c = 1, %}{{ c }}", {}),
    ("set_block", "{% set body %}  Hi {{ name }}  {% endset %}[{{ body }}]{% set t | trim | upper %}  x  {% endset %}[{{ t }}]", {"name": "Bob"}),
    ("unpack_error", "{% set a, b = [1, 2, 3] %}", {}),
    ("namespace", "{% set ns = namespace(a=1, b='x') %}{% for i in range(3) %}{% set ns.a = ns.a + i %}{% endfor %}{{ ns.a }} {{ ns.b }} {{ ns.c is defined }} {{ ns }}", {}),
    ("namespace_from_dict", "{% set ns = namespace({'k': 1}, j=2) %}{{ ns.k }}{{ ns.j }}{{ ns['k'] }}", {}),
    ("namespace_cycle", "{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}|{% set a = namespace(x=1) %}{% set b = namespace(a=a) %}{% set a.b = b %}{{ a }}", {}),
    ("set_attr_non_namespace", "{% set d = {} %}{% set d.x = 1 %}", {"d": {}}),
    ("with_block", "{% set x = 1 %}{% with x = 2, y = x + 1 %}{{ x }}{{ y }}{% endwith %}{{ x }}", {}),
    ("loop_var_not_leaking", "{% for q in [1] %}{% endfor %}[{{ q }}]", {}),
    ("filter_block", "{% filter upper %}hello {{ 'x' }}{% endfilter %}", {}),
    # ---- macros and call blocks ----
    ("macro_basic", "{% macro greet(name, greeting='Hi') %}{{ greeting }}, {{ name }}!{% endmacro %}{{ greet('Ann') }} {{ greet('Bo', 'Yo') }} {{ greet(greeting='Hey', name='Cy') }}", {}),
    ("macro_missing_arg", "{% macro m(a, b) %}[{{ a }}|{{ b }}|{{ b is defined }}]{% endmacro %}{{ m(1) }}", {}),
    ("macro_default_refers_param", "{% macro m(a, b=a ~ '!') %}{{ b }}{% endmacro %}{{ m('x') }}", {}),
    ("macro_recursion", "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}{{ fact(5) }}", {}),
    ("macro_late_binding", "{% macro m() %}{{ y }}{% endmacro %}{{ m() }}{% set y = 5 %}{{ m() }}", {}),
    ("macro_no_dynamic_scope", "{% macro m() %}[{{ x }}]{% endmacro %}{% for x in [1] %}{{ m() }}{% endfor %}", {}),
    ("macro_varargs_kwargs", "{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, k='v') }}", {}),
    ("macro_too_many_args", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}", {}),
    ("macro_bad_kwarg", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(b=1) }}", {}),
    ("macro_trim_result", "{% macro m() %}  x  {% endmacro %}[{{ m() | trim }}]{{ m is callable }}", {}),
    ("call_block", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}inner {{ 1 + 1 }}{% endcall %}", {}),
    ("call_block_args", "{% macro each(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(x) each([1, 2]) %}<{{ x }}>{% endcall %}", {}),
    ("macro_in_macro_scope", "{% set ns = namespace(v='') %}{% macro add(s) %}{% set ns.v = ns.v ~ s %}{% endmacro %}{{ add('a') }}{{ add('b') }}{{ ns.v }}", {}),
    ("generation_tag", "{% generation %}{% set x = 1 %}gen{{ x }}{% endgeneration %}[{{ x }}]", {}),
    # ---- tests ----
    ("tests_types", "{{ 1 is integer }}{{ 1.0 is integer }}{{ true is integer }}{{ 1.5 is float }}{{ true is number }}{{ 'a' is string }}{{ {} is mapping }}{{ [] is mapping }}", {}),
    ("tests_seq", "{{ [] is sequence }}{{ 'a' is sequence }}{{ {} is sequence }}{{ 1 is sequence }}{{ nope is sequence }}{{ [] is iterable }}{{ 1 is iterable }}{{ nope is iterable }}", {}),
    ("tests_defined", "{{ x is defined }}{{ nope is defined }}{{ nope is undefined }}{{ n is none }}{{ n is not none }}{{ x is not defined }}", {"x": 1, "n": None}),
    ("tests_bool", "{{ true is boolean }}{{ 1 is boolean }}{{ true is true }}{{ 1 is true }}{{ false is false }}{{ 0 is false }}", {}),
    ("tests_numbers", "{{ 3 is odd }}{{ 3 is even }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(2) }}{{ 1 is eq 1 }}{{ 1 is ne 1 }}{{ 2 is gt 1 }}{{ 2 is lt 1 }}{{ 2 is ge 2 }}{{ 2 is le 1 }}", {}),
    ("tests_misc", "{{ 'x' is in 'xyz' }}{{ 3 is in [1, 2] }}{{ none is sameas none }}{{ 'ABC' is upper }}{{ 'abc' is lower }}{{ 'upper' is filter }}{{ 'odd' is test }}{{ 'nope' is filter }}", {}),
    ("test_then_and", "{{ 1 is number and 'a' is string }}", {}),
    ("test_equalto", "{{ [1, 2, 1]|select('equalto', 1)|list }}", {}),
    # ---- filters ----
    ("f_case", "{{ 'hello World'|upper }} {{ 'Hello'|lower }} {{ 'hELLO wORLD'|capitalize }} {{ 'hello big-world (x)'|title }} {{ 'straße'|upper }}", {}),
    ("f_trim", "[{{ '  x  '|trim }}][{{ 'xxaxx'|trim('x') }}][{{ '\u3000\u00a0 y\n'|trim }}][{{ none|trim }}]", {}),
    ("f_default", "{{ nope|default('d') }} {{ ''|default('d') }} {{ ''|default('d', true) }} {{ none|d('x') }} {{ none|d('x', boolean=true) }} [{{ nope|default }}]", {}),
    ("f_length", "{{ 'héllo'|length }} {{ [1,2]|count }} {{ {'a': 1}|length }} {{ nope|length }}", {}),
    ("f_length_generator_raises", "{{ ['a']|map('upper')|length }}", {}),
    ("f_join", "{{ [1, 2, 3]|join(', ') }} {{ ['a', 'b']|join }} {{ m|join('|', attribute='role') }}", {"m": MSGS}),
    ("f_map", "{{ ['a', 'b']|map('upper')|join }} {{ m|map(attribute='role')|list }} {{ m|map(attribute='nope', default='?')|list }} {{ [' a ', 'b ']|map('trim')|list }} {{ ['a,b']|map('replace', ',', ';')|first }}", {"m": MSGS}),
    ("f_select", "{{ range(6)|select('odd')|list }} {{ range(6)|reject('odd')|list }} {{ [0, 1, '', 'a']|select|list }} {{ m|selectattr('role', 'equalto', 'user')|list }} {{ m|rejectattr('extra')|map(attribute='role')|join(',') }} {{ m|selectattr('extra', 'none')|list|length }}", {"m": MSGS}),
    ("f_selectattr_defined", "{{ [{'a': 1}, {'b': 0}]|selectattr('a', 'defined')|list }}", {}),
    ("f_dictsort", "{{ d|dictsort }} {{ d|dictsort(true) }} {{ d|dictsort(by='value') }} {{ d|dictsort(reverse=true) }}", {"d": {"b": 1, "A": 3, "a": 2}}),
    ("f_dictsort_mixed_raises", "{{ {'a': 1, 1: 2}|dictsort }}", {}),
    ("f_items", "{% for k, v in d|items %}{{ k }}{{ v }}{% endfor %}{% for k, v in nope|items %}x{% endfor %}", {"d": {"b": 1, "a": 2}}),
    ("f_list_first_last", "{{ 'abc'|list }} {{ {'a': 1, 'b': 2}|list }} {{ [3, 4]|first }} {{ [3, 4]|last }} {{ 'xyz'|first }} [{{ []|first }}] {{ range(3)|list|last }}", {}),
    ("f_sort", "{{ [3, 1, 2]|sort }} {{ ['b', 'A', 'a']|sort }} {{ ['b', 'A', 'a']|sort(case_sensitive=true) }} {{ [3, 1]|sort(reverse=true) }} {{ m|sort(attribute='role')|map(attribute='role')|join(',') }}", {"m": MSGS}),
    ("f_reverse_unique", "{{ 'abc'|reverse }} {{ [1, 2]|reverse|list }} {{ [1, 2, 1, 'a', 'A']|unique|list }} {{ ['a', 'A']|unique(case_sensitive=true)|list }}", {}),
    ("f_min_max_sum", "{{ [3, 1, 2]|min }} {{ [3, 1, 2]|max }} {{ ['b', 'A']|max }} {{ [1, 2.5]|sum }} {{ m|map(attribute='content')|map('length')|sum }} {{ [{'n': 2}, {'n': 3}]|sum(attribute='n') }}", {"m": MSGS}),
    ("f_tojson", "{{ d|tojson }}|{{ 'é<>&\\'\"'|tojson }}|{{ [1, 2.0, none, true]|tojson }}|{{ {}|tojson }}", {"d": NESTED}),
    ("f_tojson_options", "{{ d|tojson(indent=2) }}|{{ d|tojson(sort_keys=true) }}|{{ d|tojson(ensure_ascii=true) }}|{{ [1, [2]]|tojson(separators=(',', ':')) }}|{{ {'a': [1, {}], 'b': []}|tojson(indent=2) }}", {"d": NESTED}),
    ("f_tojson_undefined_raises", "{{ nope|tojson }}", {}),
    ("f_int_float", "{{ 3.7|int }} {{ '3.7'|int }} {{ 'x'|int }} {{ '12'|int + 1 }} {{ ' 42 '|int }} {{ 'ff'|int(base=16) }} {{ '5'|float }} {{ 'x'|float(1.5) }} {{ 3|float }} {{ none|int(7) }} {{ true|int }}", {}),
    ("f_round", "{{ 2.5|round }} {{ 3.5|round }} {{ 3.14159|round(2) }} {{ 2.675|round(2) }} {{ 2.5|round(0, 'floor') }} {{ 2.1|round(0, 'ceil') }} {{ 7|round }} {{ 1.25|round(1) }}", {}),
    ("f_replace", "{{ 'a-b-c'|replace('-', '+') }} {{ 'a-b-c'|replace('-', '', 1) }} {{ 'abc'|replace('', '.') }}", {}),
    ("f_indent", "[{{ 'a\nb\n\nc'|indent }}][{{ 'a\nb'|indent(2, true) }}][{{ 'a\n\nb'|indent(width='> ', blank=true) }}]", {}),
    ("f_string_safe_escape", "{{ 1|string ~ 2 }} {{ '<a href=\"x\">&\\''|e }} {{ '<b>'|safe }} {{ none|string }}", {}),
    ("f_center_truncate", "[{{ 'ab'|center(6) }}][{{ 'hello world foo bar'|truncate(9) }}][{{ 'hello world'|truncate(9, true) }}][{{ 'short'|truncate(20) }}]", {}),
    ("f_batch_format_wordcount", "{{ range(5)|batch(2)|list }} {{ range(5)|batch(2, 'x')|list }} {{ '%s+%s'|format(1, 2) }} {{ 'one two, three'|wordcount }}", {}),
    ("f_attr", "{{ m[0]|attr('role') }}", {"m": MSGS}),
    ("unknown_filter", "{{ x|nofilter }}", {}),
    ("unknown_filter_in_if_deferred", "{% if false %}{{ x|nofilter }}{% endif %}ok", {}),
    ("unknown_test", "{{ x is notest }}", {}),
    # ---- methods of str / dict / list ----
    ("str_methods", "{{ '  ab  '.strip() }}|{{ 'xxaxx'.lstrip('x') }}|{{ 'ab  '.rstrip() }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}|{{ 'a b c'.rsplit(' ', 1) }}|{{ 'a\nb\r\nc'.splitlines() }}", {}),
    ("str_methods2", "{{ 'abc'.startswith('a') }}{{ 'abc'.startswith(('x', 'ab')) }}{{ 'abc'.endswith('bc') }}|{{ 'aXa'.replace('a', 'b') }}|{{ 'Hello'.lower() }}{{ 'Hello'.upper() }}|{{ 'hello world'.title() }}|{{ 'hELLO'.capitalize() }}|{{ 'héllo'.find('l') }}{{ 'abc'.find('z') }}{{ 'hello'.rfind('l') }}|{{ 'banana'.count('a') }}", {}),
    ("str_methods3", "{{ ', '.join(['a', 'b']) }}|{{ 'x'.center(5, '*') }}|{{ 'x'.ljust(3, '.') }}|{{ 'x'.rjust(3) }}|{{ '42'.zfill(5) }}|{{ 'a=b=c'.partition('=') }}|{{ 'a=b=c'.rpartition('=') }}|{{ '123'.isdigit() }}{{ 'ab'.isalpha() }}{{ ' '.isspace() }}{{ 'ab'.islower() }}{{ 'AB'.isupper() }}|{{ 'prefix_x'.removeprefix('prefix_') }}", {}),
    ("str_format_method", "{{ '{} and {}'.format('a', 1) }}|{{ '{1}{0}'.format('a', 'b') }}|{{ '{x}-{y!r}'.format(x=1, y='q') }}|{{ '{:>5}|{:<4}|{:^5}|{:.2f}|{:05d}|{:,}'.format('r', 'l', 'c', 3.14159, 42, 1234567) }}|{{ '{{}}'.format() }}", {}),
    ("dict_methods", "{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 'def') }} {{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }}", {"d": {"a": 1, "b": [2]}}),
    ("list_methods", "{{ [1, 2, 1].count(1) }} {{ ['a', 'b'].index('b') }}", {}),
    ("list_append_unsafe", "{% set l = [] %}{{ l.append(1) }}", {}),
    ("list_append_attr_undefined", "[{{ [1].append }}]{{ [1].append is defined }}", {}),
    ("dict_update_unsafe", "{% set d = {} %}{{ d.update({'a': 1}) }}", {}),
    ("private_attr_hidden", "{{ 'x'.__class__ is defined }}", {}),
    # ---- globals ----
    ("range", "{{ range(3)|list }} {{ range(1, 10, 3)|list }} {{ range(5, 0, -2)|list }} {{ range(0)|list }}", {}),
    ("range_too_big", "{{ range(100001)|length }}", {}),
    ("raise_exception", "{% if true %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}", {}),
    ("dict_global", "{{ dict(a=1, b=2) }} {{ dict([('x', 1)]) }}", {}),
    ("joiner_cycler", "{% set j = joiner(' | ') %}{% for x in [1, 2, 3] %}{{ j() }}{{ x }}{% endfor %} {% set c = cycler('a', 'b') %}{{ c.next() }}{{ c.next() }}{{ c.next() }}{{ c.current }}", {}),
    ("calls", "{{ m[0].get('role') }} {{ 'a b'.split()|length }} {{ (m|first).content|trim }}", {"m": MSGS}),
    # ---- syntax errors ----
    ("syntax_unclosed_block", "{% if true %}x", {}),
    ("syntax_unknown_tag", "{% frobnicate %}", {}),
    ("syntax_bad_expr", "{{ 1 + }}", {}),
    ("syntax_unclosed_comment", "a {# b", {}),
    ("syntax_break_outside_loop", "{% break %}", {}),
    ("syntax_unbalanced", "{{ (1 }}", {}),
    ("syntax_unexpected_char", "{{ 1 ! 2 }}", {}),
    ("syntax_endfor_mismatch", "{% for x in y %}{% endif %}", {}),
    ("syntax_leading_zero", "{{ 012 }}", {}),
    ("syntax_chained_is", "{{ 1 is number is number }}", {}),
]


def render(template, variables):
    try:
        return {"expect": ENV.from_string(template).render(**variables)}
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"}


def main():
    out = []
    names = set()
    for name, template, variables in CASES:
        assert name not in names, name
        names.add(name)
        out.append({"name": name, "template": template, "vars": variables, **render(template, variables)})
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "chat", "jinja_cases.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {len(out)} cases to {os.path.normpath(path)}")


if __name__ == "__main__":
    main()
