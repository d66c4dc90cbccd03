"""The Plan page's deployment section: the files that apply the recommended (or chosen)
option, and the command line that writes them (``planner.plan.deploy``)."""

from __future__ import annotations

import shlex

import streamlit as st

from dashboard.plan_url import DEPLOY_KEY, option_value
from dashboard.ui import show_problems
from planner.errors import BadInput
from planner.plan.deploy import choose_option, deployment, option_key
from planner.plan.outcomes import Recommendation
from planner.plan.params import PlanParams
from planner.plan.resolve import PlanInputs, command_line
from planner.text import md

LANGUAGES = {"json": "json", "yaml": "yaml", "pbtxt": "protobuf", "env": "bash"}


def deploy_section(result: Recommendation, inputs: PlanInputs, params: PlanParams) -> None:
    """The files that apply the recommended (or chosen) option."""
    st.subheader("Deploy")
    holding = [o for o in result.options if o.cap >= 1]
    if not holding or result.recommended is None:
        st.caption("No option holds a seat, so there is nothing to deploy.")
        return
    # A key names a policy and a mode: of several MIG profiles (a plan of every profile)
    # it stands for the best-ranked one, which is the one ``choose_option`` deploys.
    labels: dict[str, str] = {}
    for o in holding:
        labels.setdefault(option_key(o), o.label)
    keys = list(labels)
    recommended = option_key(result.recommended)
    chosen_key = st.session_state.get(DEPLOY_KEY)
    if chosen_key == recommended or (chosen_key is not None and option_value(chosen_key) is None):
        # The recommended option, or a label the select box handed back when its choices
        # changed under it (another curve, another sharing mode): the recommended option.
        st.session_state[DEPLOY_KEY] = None
    elif chosen_key is not None and chosen_key not in keys:
        st.info(
            f"The link asked to deploy {md(chosen_key)}, which holds no seat in this plan; "
            "showing the recommended option."
        )
        st.session_state[DEPLOY_KEY] = None
    st.selectbox(
        "Option to deploy",
        [None, *[k for k in keys if k != recommended]],
        key=DEPLOY_KEY,
        format_func=lambda k: (
            f"the recommended option ({labels[recommended]})" if k is None else labels[k]
        ),
    )
    option = choose_option(result, st.session_state.get(DEPLOY_KEY))
    try:
        files = deployment(result, option, inputs.card)
    except BadInput as exc:  # pragma: no cover - every option offered holds a seat
        show_problems("Nothing to deploy:", exc.problems)
        return
    for file in files:
        with st.container(key=f"plan_deploy_{file.name.replace('.', '_')}"):
            st.markdown(f"**{file.name}**")
            st.caption(md(file.assumption))
            st.code(file.text, language=LANGUAGES[file.format], wrap_lines=True)
            st.download_button(
                f"Download {file.name}",
                data=file.text,
                file_name=file.name,
                key=f"plan_deploy_download_{file.name}",
                on_click="ignore",
            )
    command = [*command_line("recommend", params)]
    command[1] = "deploy"
    if st.session_state.get(DEPLOY_KEY):
        command += ["--option", str(st.session_state[DEPLOY_KEY])]
    st.caption("The same files from the command line:")
    st.code(shlex.join(command), language="bash", wrap_lines=True)
