// Runs generated Jenkins scripted pipelines against a stub of the pipeline DSL and records every step.
//
//   groovy pipeline_stub.groovy scenarios.json   -> prints a JSON list, one result per scenario
//
// A table scenario, {"script": path, "method": name}, returns {"table": the method's return value}
// without running the pipeline. A run scenario returns {"calls": [...], "error": message or null}:
//   {"script": path, "params": {...}, "env": {...},
//    "files": {name: the JSON value readJSON(file: name) returns},
//    "workspace": folder, "execute": [substrings of `sh` scripts to run for real, with bash, in the workspace,
//                                     with the parameters and `env` in their environment, as Jenkins does],
//    "stdout": {substring of an `sh` script not run for real: what it prints, for `returnStdout`},
//    "credentials": {Jenkins credential id: its secret text, which withCredentials binds; others are missing},
//    "failing_stages": [names whose `ci-tool stage run` fails, or whose L0_Test run fails],
//    "unstable_stages": [names whose L0_Test run ends UNSTABLE]}
// `parallel` runs its branches one after another; with failFast, a failing branch aborts the ones after
// it (recorded as an "aborted" step), as Jenkins aborts the still-running siblings.

import groovy.json.JsonOutput
import groovy.json.JsonSlurper
import groovy.transform.Field
import org.codehaus.groovy.runtime.InvokerHelper

class PipelineError extends RuntimeException {
    PipelineError(String message) { super(message) }
}

// What Jenkins' credentials binding throws for an id it has no credential of (not a step's failure).
class CredentialNotFound extends RuntimeException {
    CredentialNotFound(String message) { super(message) }
}

@Field final GroovyClassLoader loader = new GroovyClassLoader()
@Field final Map compiled = [:]

// Each script is compiled once; every scenario runs a fresh instance with its own binding.
Script instance(String path, Binding binding) {
    Class scriptClass = compiled[path] ?: (compiled[path] = loader.parseClass(new File(path)))
    return InvokerHelper.createScript(scriptClass, binding)
}

Map tableOf(Map scenario) {
    return [table: instance(scenario.script, new Binding()).invokeMethod(scenario.method, null)]
}

Map runScenario(Map scenario) {
    List calls = []
    Map files = [:]
    List failing = scenario.failing_stages ?: []
    List unstableStages = scenario.unstable_stages ?: []
    def record = { Map call -> calls << call.collectEntries { k, v -> [k, v instanceof GString ? v.toString() : v] } }
    def binding = new Binding()
    binding.setVariable('params', scenario.params)
    binding.setVariable('scm', 'scm')
    binding.setVariable('env', scenario.env ?: [:])
    File workspace = scenario.workspace ? new File(scenario.workspace) : null
    binding.setVariable('properties', { List properties ->
        record(step: 'properties', parameters: properties.flatten().collect { it.name })
    })
    binding.setVariable('parameters', { List parameters -> parameters })
    binding.setVariable('text', { Map parameter -> parameter })
    binding.setVariable('booleanParam', { Map parameter -> parameter })
    binding.setVariable('string', { Map parameter -> parameter })
    binding.setVariable('readJSON', { Map args ->
        if (args.containsKey('file')) {
            if (workspace != null && new File(workspace, args.file).exists()) {
                return new JsonSlurper().parse(new File(workspace, args.file))
            }
            return (scenario.files ?: [:])[args.file]
        }
        return new JsonSlurper().parseText(args.text)
    })
    binding.setVariable('writeJSON', { Map args -> assert args.returnText; JsonOutput.toJson(args.json) })
    binding.setVariable('writeFile', { Map args ->
        files[args.file] = args.text
        if (workspace != null) {
            new File(workspace, args.file).text = args.text
        }
        record(step: 'writeFile', file: args.file)
    })
    binding.setVariable('node', { String label, Closure body -> record(step: 'node', label: label); body() })
    binding.setVariable('stage', { String name, Closure body -> record(step: 'stage', name: name); body() })
    binding.setVariable('timeout', { Map args, Closure body -> record(step: 'timeout', time: args.time, unit: args.unit); body() })
    binding.setVariable('checkout', { scm -> record(step: 'checkout') })
    binding.setVariable('echo', { message -> record(step: 'echo', message: message.toString()) })
    binding.setVariable('error', { message -> record(step: 'error', message: message.toString()); throw new PipelineError(message.toString()) })
    binding.setVariable('unstable', { message -> record(step: 'unstable', message: message.toString()) })
    binding.setVariable('sleep', { Map args -> record(step: 'sleep', time: args.time, unit: args.unit) })
    // "credentials": {id: secret text}: withCredentials binds each to its variable for the steps inside it
    // (for `sh`, in the environment of what runs for real, and named in its record), as Jenkins does.
    Map credentials = scenario.credentials ?: [:]
    Map bound = [:]
    Map stashes = [:]
    binding.setVariable('withCredentials', { List bindings, Closure body ->
        Map exported = [:]
        for (Map wanted : bindings) {
            if (!credentials.containsKey(wanted.credentialsId)) {
                record(step: 'withCredentials', missing: wanted.credentialsId)
                throw new CredentialNotFound("Could not find credentials entry with ID '${wanted.credentialsId}'")
            }
            exported[wanted.variable] = credentials[wanted.credentialsId]
        }
        record(step: 'withCredentials', variables: exported.keySet() as List)
        Map before = new HashMap(bound)
        bound.putAll(exported)
        try {
            return body()
        } finally {
            bound.clear()
            bound.putAll(before)
        }
    })
    binding.setVariable('stash', { Map args -> stashes[args.name] = args.includes; record(step: 'stash', name: args.name, includes: args.includes) })
    binding.setVariable('unstash', { String name ->
        record(step: 'unstash', name: name)
        if (!stashes.containsKey(name)) {
            throw new PipelineError("No such saved stash '${name}'")
        }
    })
    binding.setVariable('sh', { script ->
        // sh 'script', or sh(returnStdout: true, script: 'script'), which returns what the script printed
        boolean returnStdout = script instanceof Map && script.returnStdout
        String command = (script instanceof Map ? script.script : script).toString()
        record(bound ? [step: 'sh', script: command, credentials: bound.keySet() as List] : [step: 'sh', script: command])
        String printed = ''
        (scenario.stdout ?: [:]).each { String wanted, String text -> if (command.contains(wanted)) { printed = text } }
        for (String wanted : scenario.execute ?: []) {
            if (command.contains(wanted)) {
                // Run it for real in the workspace, so the contract between pipeline and ci-tool is tested.
                Map environment = new HashMap(System.getenv())
                environment.putAll(scenario.params ?: [:])
                environment.putAll(scenario.env ?: [:])
                environment.putAll(bound)
                List variables = environment.collect { k, v -> "${k}=${v}".toString() }
                Process process = ['bash', '-c', command].execute(variables, workspace)
                StringBuilder out = new StringBuilder(), err = new StringBuilder()
                process.waitForProcessOutput(out, err)
                record(step: 'executed', script: command, exitCode: process.exitValue(), stdout: out.toString(),
                       stderr: err.toString())
                if (process.exitValue() != 0) {
                    throw new PipelineError("script returned exit code ${process.exitValue()}")
                }
                printed = out.toString()
                break
            }
        }
        for (String name : failing) {
            if (command.contains(" stage run '${name}' ")) {
                throw new PipelineError("script returned exit code 1")
            }
        }
        return returnStdout ? printed : null
    })
    binding.setVariable('junit', { Map args -> record(step: 'junit', testResults: args.testResults, allowEmptyResults: args.allowEmptyResults) })
    binding.setVariable('archiveArtifacts', { Map args -> record(step: 'archiveArtifacts', artifacts: args.artifacts, allowEmptyArchive: args.allowEmptyArchive) })
    binding.setVariable('build', { Map args ->
        Map parameters = args.parameters.collectEntries { [it.name, it.value] }
        List stages = new JsonSlurper().parseText(parameters.STAGES)
        List stageRunArgs = new JsonSlurper().parseText(parameters.STAGE_RUN_ARGS)
        String result = stages.any { it in failing } ? 'FAILURE' : stages.any { it in unstableStages } ? 'UNSTABLE' : 'SUCCESS'
        record(step: 'build', job: args.job, propagate: args.propagate, stages: stages, failFast: parameters.FAIL_FAST,
               stageRunArgs: stageRunArgs, result: result, parameters: parameters)
        return [result: result]
    })
    binding.setVariable('parallel', { Map branches ->
        boolean failFast = branches.failFast ?: false
        List names = branches.keySet().findAll { it != 'failFast' } as List
        record(step: 'parallel', branches: names, failFast: failFast)
        Throwable first = null
        for (int i = 0; i < names.size(); i++) {
            try {
                branches[names[i]]()
            } catch (PipelineError failure) {
                if (failFast) {
                    record(step: 'aborted', branches: names.subList(i + 1, names.size()))
                    throw failure
                }
                first = first ?: failure
            }
        }
        if (first != null) {
            throw first
        }
    })
    String error = null
    try {
        instance(scenario.script, binding).run()
    } catch (PipelineError failure) {
        error = failure.message
    }
    return [calls: calls, error: error]
}

List scenarios = new JsonSlurper().parse(new File(args[0]))
List results = []
for (Map scenario : scenarios) {
    results << (scenario.method ? tableOf(scenario) : runScenario(scenario))
}
println JsonOutput.toJson(results)
