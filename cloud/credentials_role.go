package cloud

import "fmt"

// maxSourceDepth bounds source_profile chains (the SDK detects cycles; a
// short bound does the same for a node's configuration).
const maxSourceDepth = 4

// awsProfileRole is an AWS profile with role_arn: the role assumed through STS over
// web_identity_token_file, source_profile or credential_source, in the
// SDK's order.
func awsProfileRole(env awsEnv, p awsProfile, depth int) credSource {
	file, _ := p.lookup("role_arn")
	origin := fmt.Sprintf("AWS profile %q in %s", p.name, file)
	arn, session := p.get("role_arn"), p.get("role_session_name")
	if tf := p.get("web_identity_token_file"); tf != "" {
		return credSource{WebIdentity: &webIdentity{RoleARN: arn, SessionName: session, Origin: origin,
			Token: tokenSource{File: tf, Var: "web_identity_token_file"}}}
	}
	var src credSource
	switch {
	case p.get("source_profile") != "":
		src = sourceAWSProfile(env, p, depth)
	case p.get("credential_source") != "":
		src = credentialSource(env, p, origin)
	default:
		return credSource{Err: fmt.Errorf("%s has role_arn but no source_profile, credential_source or "+
			"web_identity_token_file: nothing to assume the role with", origin)}
	}
	if src.Err != nil {
		return src
	}
	return credSource{AssumeRole: &assumeRole{RoleARN: arn, SessionName: session, ExternalID: p.get("external_id"),
		Source: &src, Origin: origin}}
}

// sourceAWSProfile: the named AWS profile's role (a chain) or its keys; a profile
// that names itself gives its own keys, as in the SDK.
func sourceAWSProfile(env awsEnv, p awsProfile, depth int) credSource {
	name := p.get("source_profile")
	src := p.sibling(name)
	if src.config == nil && src.creds == nil {
		return credSource{Err: fmt.Errorf("AWS profile %q: source_profile %q is in neither %s nor %s", p.name, name,
			p.configFile, p.credsFile)}
	}
	if name != p.name {
		if _, ok := src.lookup("role_arn"); ok {
			if depth >= maxSourceDepth {
				return credSource{Err: fmt.Errorf("AWS profile %q: source_profile chain longer than %d", p.name, maxSourceDepth)}
			}
			return awsProfileRole(env, src, depth+1)
		}
	}
	if keys, ok := awsProfileKeys(src); ok {
		return keys
	}
	return credSource{Err: fmt.Errorf("AWS profile %q: source_profile %q has no aws_access_key_id and aws_secret_access_key",
		p.name, name)}
}

// credentialSource: Environment, Ec2InstanceMetadata or EcsContainer.
func credentialSource(env awsEnv, p awsProfile, origin string) credSource {
	switch cs := p.get("credential_source"); cs {
	case "Environment":
		id, secret := env.first("AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY"), env.first("AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY")
		if id == "" || secret == "" {
			return credSource{Err: fmt.Errorf("%s: credential_source Environment but AWS_ACCESS_KEY_ID and "+
				"AWS_SECRET_ACCESS_KEY are not both set", origin)}
		}
		return chooseCredentials(env, awsProfile{})
	case "Ec2InstanceMetadata":
		return credSource{}
	case "EcsContainer":
		if src := containerSource(env); src.Container != nil || src.Err != nil {
			return src
		}
		return credSource{Err: fmt.Errorf("%s: credential_source EcsContainer but AWS_CONTAINER_CREDENTIALS_FULL_URI "+
			"and _RELATIVE_URI are not set", origin)}
	default:
		return credSource{Err: fmt.Errorf("%s: credential_source %q: want Environment, Ec2InstanceMetadata or EcsContainer",
			origin, cs)}
	}
}
