"""usage.html.j2 as compiled by jinja2 3.1.6 (see `html.COMPILED`).

Made by `auditor.report.html.compiled_module`, not by hand: `python -m pytest
tests/test_report_compiled.py --update-golden` writes it anew. A module whose KEY does
not match its template is not used (the template is compiled from its source).
"""

# ruff: noqa
# mypy: ignore-errors
# fmt: off
KEY = "23574cb2187a7dbbbc211263d6b6edaaf14032317d51fd0f919c6371baca8a26"
from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'usage.html.j2'

def root(context, missing=missing, environment=environment):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_d = resolve('d')
    l_0_total = resolve('total')
    l_0_uc = resolve('uc')
    l_0_chart_cap = resolve('chart_cap')
    l_0_days_shown = resolve('days_shown')
    l_0_urows = resolve('urows')
    l_0_u = missing
    try:
        t_1 = environment.filters['length']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'length' found.")
    try:
        t_2 = environment.filters['short']
    except KeyError:
        @internalcode
        def t_2(*unused):
            raise TemplateRuntimeError("No filter named 'short' found.")
    pass
    yield '<h2 id="usage">Usage</h2>\n'
    l_0_u = environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'usage')
    context.vars['u'] = l_0_u
    context.exported_vars.add('u')
    if environment.getattr((undefined(name='u') if l_0_u is missing else l_0_u), 'unavailable'):
        pass
        yield '<p class="wrap">Usage not evaluated: '
        yield escape(environment.finalize(t_2(environment.getattr((undefined(name='u') if l_0_u is missing else l_0_u), 'unavailable'))))
        yield '</p>\n'
    else:
        pass
        if environment.getattr((undefined(name='u') if l_0_u is missing else l_0_u), 'window'):
            pass
            yield '<p class="muted">Analytics '
            yield escape(environment.finalize(environment.getitem(environment.getattr((undefined(name='u') if l_0_u is missing else l_0_u), 'window'), 0)))
            yield ' to '
            yield escape(environment.finalize(environment.getitem(environment.getattr((undefined(name='u') if l_0_u is missing else l_0_u), 'window'), 1)))
            yield ': '
            yield escape(environment.finalize(context.call(environment.getattr((undefined(name='u') if l_0_u is missing else l_0_u), 'stored'))))
            yield '.</p>'
        l_0_total = context.call(environment.getattr((undefined(name='u') if l_0_u is missing else l_0_u), 'total'))
        context.vars['total'] = l_0_total
        context.exported_vars.add('total')
        if (undefined(name='total') if l_0_total is missing else l_0_total):
            pass
            yield '<p class="wrap">'
            yield escape(environment.finalize((undefined(name='total') if l_0_total is missing else l_0_total)))
            yield '</p>'
        l_0_uc = context.call(environment.getattr((undefined(name='u') if l_0_u is missing else l_0_u), 'chart'))
        context.vars['uc'] = l_0_uc
        context.exported_vars.add('uc')
        if (undefined(name='uc') if l_0_uc is missing else l_0_uc):
            pass
            yield '<svg class="chart" viewBox="0 0 '
            yield escape(environment.finalize(environment.getattr((undefined(name='uc') if l_0_uc is missing else l_0_uc), 'width')))
            yield ' '
            yield escape(environment.finalize(environment.getattr((undefined(name='uc') if l_0_uc is missing else l_0_uc), 'height')))
            yield '" role="img" aria-label="Daily billable tokens by model, '
            yield escape(environment.finalize(environment.getattr((undefined(name='uc') if l_0_uc is missing else l_0_uc), 'first')))
            yield ' to '
            yield escape(environment.finalize(environment.getattr((undefined(name='uc') if l_0_uc is missing else l_0_uc), 'last')))
            yield '">\n'
            for l_1_g in environment.getattr((undefined(name='uc') if l_0_uc is missing else l_0_uc), 'gaps'):
                _loop_vars = {}
                pass
                yield '<rect x="'
                yield escape(environment.finalize(environment.getattr(l_1_g, 'x')))
                yield '" y="'
                yield escape(environment.finalize(environment.getattr(l_1_g, 'y')))
                yield '" width="'
                yield escape(environment.finalize(environment.getattr(l_1_g, 'width')))
                yield '" height="'
                yield escape(environment.finalize(environment.getattr(l_1_g, 'height')))
                yield '" fill="'
                yield escape(environment.finalize(environment.getattr(l_1_g, 'fill')))
                yield '"><title>'
                yield escape(environment.finalize(environment.getattr(l_1_g, 'title')))
                yield '</title></rect>\n'
            l_1_g = missing
            for l_1_t in environment.getattr((undefined(name='uc') if l_0_uc is missing else l_0_uc), 'y_ticks'):
                _loop_vars = {}
                pass
                yield '<line class="grid" x1="'
                yield escape(environment.finalize(environment.getattr((undefined(name='uc') if l_0_uc is missing else l_0_uc), 'plot_left')))
                yield '" x2="'
                yield escape(environment.finalize(environment.getattr((undefined(name='uc') if l_0_uc is missing else l_0_uc), 'plot_right')))
                yield '" y1="'
                yield escape(environment.finalize(environment.getattr(l_1_t, 'y')))
                yield '" y2="'
                yield escape(environment.finalize(environment.getattr(l_1_t, 'y')))
                yield '" stroke="#d1d9e0"/><text class="axis" x="'
                yield escape(environment.finalize(environment.getattr(l_1_t, 'x')))
                yield '" y="'
                yield escape(environment.finalize((environment.getattr(l_1_t, 'y') + 4)))
                yield '" text-anchor="end" fill="#59636e" font-size="11">'
                yield escape(environment.finalize(environment.getattr(l_1_t, 'text')))
                yield '</text>\n'
            l_1_t = missing
            for l_1_b in environment.getattr((undefined(name='uc') if l_0_uc is missing else l_0_uc), 'bars'):
                _loop_vars = {}
                pass
                yield '<rect class="bar" x="'
                yield escape(environment.finalize(environment.getattr(l_1_b, 'x')))
                yield '" y="'
                yield escape(environment.finalize(environment.getattr(l_1_b, 'y')))
                yield '" width="'
                yield escape(environment.finalize(environment.getattr(l_1_b, 'width')))
                yield '" height="'
                yield escape(environment.finalize(environment.getattr(l_1_b, 'height')))
                yield '" fill="'
                yield escape(environment.finalize(environment.getattr(l_1_b, 'fill')))
                yield '" stroke="#fff" stroke-width="1"><title>'
                yield escape(environment.finalize(environment.getattr(l_1_b, 'title')))
                yield '</title></rect>\n'
            l_1_b = missing
            for l_1_t in environment.getattr((undefined(name='uc') if l_0_uc is missing else l_0_uc), 'x_ticks'):
                _loop_vars = {}
                pass
                yield '<text class="axis" x="'
                yield escape(environment.finalize(environment.getattr(l_1_t, 'x')))
                yield '" y="'
                yield escape(environment.finalize(environment.getattr(l_1_t, 'y')))
                yield '" text-anchor="middle" fill="#59636e" font-size="11">'
                yield escape(environment.finalize(environment.getattr(l_1_t, 'text')))
                yield '</text>\n'
            l_1_t = missing
            yield '</svg>\n<p class="legend">'
            l_1_loop = missing
            for l_1_l, l_1_loop in LoopContext(environment.getattr((undefined(name='uc') if l_0_uc is missing else l_0_uc), 'legend'), undefined):
                _loop_vars = {}
                pass
                yield '<span class="'
                yield escape(environment.finalize(('nowrap' if environment.getattr(l_1_l, 'whole') else 'wrap')))
                yield '"><svg width="10" height="10" viewBox="0 0 10 10" aria-hidden="true"><rect width="10" height="10" fill="'
                yield escape(environment.finalize(environment.getattr(l_1_l, 'fill')))
                yield '"/></svg>&nbsp;'
                yield escape(environment.finalize(t_2(environment.getattr(l_1_l, 'text'))))
                yield '</span>'
                if (not environment.getattr(l_1_loop, 'last')):
                    pass
                    yield ' &emsp; '
            l_1_loop = l_1_l = missing
            yield '</p>\n<p class="muted">Daily billable tokens by model ('
            yield escape(environment.finalize(environment.getattr((undefined(name='uc') if l_0_uc is missing else l_0_uc), 'first')))
            yield ' to '
            yield escape(environment.finalize(environment.getattr((undefined(name='uc') if l_0_uc is missing else l_0_uc), 'last')))
            yield ', a slot per day), stacked in the legend\'s order from the bottom; "All models" in the table below adds up the day\'s models, the total above the days\' own totals.'
            if environment.getattr((undefined(name='uc') if l_0_uc is missing else l_0_uc), 'not_stored'):
                pass
                yield ' Not stored: '
                yield escape(environment.finalize(environment.getattr((undefined(name='uc') if l_0_uc is missing else l_0_uc), 'not_stored')))
                yield ' (shaded, no bar).'
            yield '</p>\n'
            l_0_days_shown = (environment.getattr((undefined(name='uc') if l_0_uc is missing else l_0_uc), 'table')[(-(undefined(name='chart_cap') if l_0_chart_cap is missing else l_0_chart_cap)):] if (undefined(name='chart_cap') if l_0_chart_cap is missing else l_0_chart_cap) else [])
            context.vars['days_shown'] = l_0_days_shown
            context.exported_vars.add('days_shown')
            yield '<details class="chart-data">\n<summary>The chart\'s figures: billable tokens per day and model ('
            yield escape(environment.finalize(t_1(environment.getattr((undefined(name='uc') if l_0_uc is missing else l_0_uc), 'table'))))
            yield ' day(s))</summary>\n<table>\n<thead><tr><th>Day</th>'
            l_1_loop = missing
            for l_1_l, l_1_loop in LoopContext(environment.getattr((undefined(name='uc') if l_0_uc is missing else l_0_uc), 'legend'), undefined):
                _loop_vars = {}
                pass
                yield '<th class="num model">'
                l_2_loop = missing
                for l_2_p, l_2_loop in LoopContext(environment.getattr(l_1_l, 'head'), undefined):
                    _loop_vars = {}
                    pass
                    if (not environment.getattr(l_2_loop, 'first')):
                        pass
                        yield '<wbr>'
                    yield escape(environment.finalize(l_2_p))
                l_2_loop = l_2_p = missing
                yield '</th>'
            l_1_loop = l_1_l = missing
            yield '<th class="num">All models</th></tr></thead>\n<tbody>\n'
            for l_1_r in (undefined(name='days_shown') if l_0_days_shown is missing else l_0_days_shown):
                _loop_vars = {}
                pass
                yield '<tr><td class="nowrap">'
                yield escape(environment.finalize(environment.getattr(l_1_r, 'day')))
                yield '</td>'
                for l_2_n in environment.getattr(l_1_r, 'figures'):
                    _loop_vars = {}
                    pass
                    yield '<td class="num">'
                    yield escape(environment.finalize(l_2_n))
                    yield '</td>'
                l_2_n = missing
                yield '<td class="num">'
                yield escape(environment.finalize(environment.getattr(l_1_r, 'total')))
                yield '</td></tr>\n'
            l_1_r = missing
            if (t_1(environment.getattr((undefined(name='uc') if l_0_uc is missing else l_0_uc), 'table')) > t_1((undefined(name='days_shown') if l_0_days_shown is missing else l_0_days_shown))):
                pass
                yield '<tr><td colspan="'
                yield escape(environment.finalize((t_1(environment.getattr((undefined(name='uc') if l_0_uc is missing else l_0_uc), 'models')) + 2)))
                yield '" class="more">'
                yield escape(environment.finalize((t_1(environment.getattr((undefined(name='uc') if l_0_uc is missing else l_0_uc), 'table')) - t_1((undefined(name='days_shown') if l_0_days_shown is missing else l_0_days_shown)))))
                yield ' more day(s) not shown (the oldest; the newest '
                yield escape(environment.finalize((undefined(name='chart_cap') if l_0_chart_cap is missing else l_0_chart_cap)))
                yield ' are listed; the chart draws every day)</td></tr>'
            yield '</tbody>\n</table>\n</details>\n'
        else:
            pass
            yield '<p class="muted">No token figures to chart.</p>\n'
        l_0_urows = context.call(environment.getattr((undefined(name='u') if l_0_u is missing else l_0_u), 'rows'), environment.getattr((undefined(name='d') if l_0_d is missing else l_0_d), 'findings'))
        context.vars['urows'] = l_0_urows
        context.exported_vars.add('urows')
        if (undefined(name='urows') if l_0_urows is missing else l_0_urows):
            pass
            yield '<table>\n<thead><tr><th>Day</th><th>Rule</th><th>Status</th><th>Observed</th><th>Setting in force</th></tr></thead>\n<tbody>\n'
            for l_1_r in (undefined(name='urows') if l_0_urows is missing else l_0_urows)[:60]:
                _loop_vars = {}
                pass
                yield '<tr><td class="nowrap">'
                yield escape(environment.finalize(environment.getattr(l_1_r, 'day')))
                yield '</td><td><code>'
                yield escape(environment.finalize(environment.getattr(l_1_r, 'rule_id')))
                yield '</code> '
                yield escape(environment.finalize(environment.getattr(l_1_r, 'title')))
                yield '</td><td><span class="st '
                yield escape(environment.finalize(environment.getattr(l_1_r, 'status')))
                yield '">'
                yield escape(environment.finalize(environment.getattr(l_1_r, 'status')))
                yield '</span></td><td class="wrap"><code>'
                yield escape(environment.finalize(environment.getattr(l_1_r, 'observed')))
                yield '</code></td><td class="wrap">'
                yield escape(environment.finalize(environment.getattr(l_1_r, 'setting')))
                yield '</td></tr>\n'
            l_1_r = missing
            if (t_1((undefined(name='urows') if l_0_urows is missing else l_0_urows)) > 60):
                pass
                yield '<tr><td colspan="5" class="more">'
                yield escape(environment.finalize((t_1((undefined(name='urows') if l_0_urows is missing else l_0_urows)) - 60)))
                yield ' more usage finding(s) not shown; see findings.json.</td></tr>'
            yield '</tbody>\n</table>\n'
        else:
            pass
            yield '<p class="muted">No usage findings.</p>\n'

blocks = {}
debug_info = '3=42&4=45&5=48&7=52&8=61&9=64&10=69&11=72&12=75&13=83&15=100&17=119&19=136&22=149&23=164&24=174&26=178&28=181&30=197&32=214&39=227&40=230&44=233&46=252'
