"""A Debian package built with dpkg-deb from files Bazel made.

    debian_package(
        name = "ringwork_deb",
        package = "ringwork",
        version = "0.1.0",
        section = "science",
        depends = ["libc6 (>= 2.34)", ...],
        description = "One line\n More lines, each starting with a blank.",
        files = {"//deploy/debian:shared_library": "/usr/lib/x86_64-linux-gnu/"},
        links = {"/usr/lib/x86_64-linux-gnu/libringwork.so.0": "libringwork.so.0.1.0"},
    )

makes ringwork_0.1.0_amd64.deb. `files` maps a target to where its files go: a
destination ending in "/" is a directory (each file keeps its name, a directory
its contents), anything else the path of the target's one file. The files of
targets listed in `binaries` get mode 0755, the rest 0644; ELF files lose their
debug information.
"""

def _debian_package_impl(ctx):
    control = ctx.actions.declare_file(ctx.label.name + ".control")
    fields = [
        "Package: " + ctx.attr.package,
        "Version: " + ctx.attr.version,
        "Architecture: amd64",
        "Maintainer: " + ctx.attr.maintainer,
        "Section: " + ctx.attr.section,
        "Priority: optional",
    ]
    if ctx.attr.depends:
        fields.append("Depends: " + ", ".join(ctx.attr.depends))
    fields.append("Description: " + ctx.attr.description)
    ctx.actions.write(control, "\n".join(fields) + "\n")
    arguments = [ctx.outputs.out.path, control.path]
    inputs = [control]
    for target, dest in ctx.attr.files.items():
        executable = target in ctx.attr.binaries
        for f in target.files.to_list():
            inputs.append(f)
            if f.is_directory:
                arguments += ["tree", f.path, dest.rstrip("/")]
                continue
            path = dest + f.basename if dest.endswith("/") else dest
            mode = "0755" if executable else "0644"
            arguments += ["file", f.path, path, mode]
    for dest, link_target in ctx.attr.links.items():
        arguments += ["link", link_target, dest]
    if ctx.file.triggers:
        inputs.append(ctx.file.triggers)
        arguments += ["debian", "triggers", ctx.file.triggers.path]
    if ctx.attr.shlibs:
        shlibs = ctx.actions.declare_file(ctx.label.name + ".shlibs")
        ctx.actions.write(shlibs, ctx.attr.shlibs + "\n")
        inputs.append(shlibs)
        arguments += ["debian", "shlibs", shlibs.path]
    ctx.actions.run(
        executable = ctx.executable._build_deb,
        arguments = arguments,
        inputs = inputs,
        outputs = [ctx.outputs.out],
        use_default_shell_env = True,
        mnemonic = "DebianPackage",
        progress_message = "Building the Debian package %s" % ctx.outputs.out.short_path,
    )
    return [DefaultInfo(
        files = depset([ctx.outputs.out]),
        runfiles = ctx.runfiles(files = [ctx.outputs.out]),
    )]

_debian_package = rule(
    implementation = _debian_package_impl,
    attrs = {
        "out": attr.output(mandatory = True),
        "package": attr.string(mandatory = True),
        "version": attr.string(mandatory = True),
        "maintainer": attr.string(default = "Ringwork developers <ringwork@localhost>"),
        "section": attr.string(mandatory = True),
        "depends": attr.string_list(),
        "description": attr.string(mandatory = True),
        "files": attr.label_keyed_string_dict(allow_files = True),
        "binaries": attr.label_list(allow_files = True),
        "links": attr.string_dict(),
        "triggers": attr.label(allow_single_file = True),
        # DEBIAN/shlibs: what an app linked against the package's library depends on.
        "shlibs": attr.string(),
        "_build_deb": attr.label(
            default = Label("//deploy/debian:build_deb"),
            executable = True,
            cfg = "exec",
        ),
    },
)

def debian_package(name, package, version, **kwargs):
    _debian_package(
        name = name,
        out = "%s_%s_amd64.deb" % (package, version),
        package = package,
        version = version,
        **kwargs
    )
