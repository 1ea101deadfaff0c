# Stage report: the static report page over the grid's episodes (analysis/report/).


rule report:
    """Write <data>/report/index.html, figures/*.png and tables/*.csv for the grid."""
    input:
        plan=NG.plan_path,
        summary=NG.summary_paths,
        episodes=NG.cell_shards("episodes"),
    output:
        NG.report_path,
    params:
        grid=NG.plan.name,
        data=NG.data_dir,
    log:
        str(NG.root / "logs" / "report" / f"{NG.plan.name}.log"),
    shell:
        "{ANALYSIS_CMD} --data-dir {params.data} report --grid {params.grid} > {log} 2>&1"
