# Stage plan: the grid resolved into cells (validated at parse time), written for the record.


rule plan:
    """Write <data>/plans/<grid>.json: the grid's config and its cells."""
    output:
        NG.plan_path,
    params:
        grid=NG.plan.grid,
        axes=NG.axes_param,
        plan=NG.plan.as_json(),  # a changed grid re-plans
        data=NG.data_dir,
    log:
        str(NG.root / "logs" / "plan" / f"{NG.plan.name}.log"),
    shell:
        "{STAGE_CMD} plan --grid {params.grid} --axes {params.axes} --data-dir {params.data}"
        " > {log} 2>&1"
