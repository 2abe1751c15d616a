"""The usage examples of a C++ library's public headers, in one file to compile.

    header_examples(
        name = "header_examples_cc",
        library = "//:ringwork",       # its one public header (ringwork.h) and
        out = "header_examples.cc",    # the headers that one includes
    )

docs/header_examples.sh says what an example is.
"""

def _header_examples_impl(ctx):
    compilation = ctx.attr.library[CcInfo].compilation_context
    roots = compilation.direct_public_headers
    if len(roots) != 1:
        fail("%s should have one public header, the API's: it has %d" % (ctx.attr.library.label, len(roots)))
    out = ctx.actions.declare_file(ctx.attr.out)
    ctx.actions.run(
        executable = ctx.executable._script,
        arguments = [out.path, roots[0].path],
        inputs = compilation.headers,
        outputs = [out],
        use_default_shell_env = True,
        mnemonic = "HeaderExamples",
        progress_message = "Collecting the examples of %s's headers" % roots[0].short_path,
    )
    return [DefaultInfo(files = depset([out]))]

header_examples = rule(
    implementation = _header_examples_impl,
    attrs = {
        "library": attr.label(providers = [CcInfo], mandatory = True),
        "out": attr.string(mandatory = True),
        "_script": attr.label(
            default = Label("//docs:header_examples_sh"),
            executable = True,
            cfg = "exec",
        ),
    },
)
